"""Read-side reports: the SQL that fetches sufficient statistics and the tables made from them."""
