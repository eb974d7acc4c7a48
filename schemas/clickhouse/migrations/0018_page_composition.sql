-- The paper's Figure 8: how result pages are composed, per experiment and engine.

-- View defined in views/<name>.sql (applied after the migrations): page_composition.
