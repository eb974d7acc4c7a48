"""What ``auditstream up`` prints once it is up: the components, then a newcomer's next steps.

Pure, so the first screen is tested as text. A key is shown only when this start made it
(shown once, as ``keys create`` shows one); otherwise the board's address carries no key
(it carried the words "(existing keys; ...)" as one) and the board asks for it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ingest.api_keys import SCOPES


@dataclass(frozen=True)
class BannerKey:
    """The key ``up`` can name: ``secret`` when it made one, else ``note`` says which keys work."""

    secret: str | None
    note: str = ""


def key_line(key: BannerKey) -> str:
    if key.secret:
        return f"{key.secret}  (scopes: {', '.join(SCOPES)})"
    return key.note


def next_steps(url: str, key: BannerKey, data_dir_arg: str = "") -> list[str]:
    """The three things to do next: open the board, make a key, read the docs; and a command to try."""
    board = f"{url}/board" + (f"#key={key.secret}" if key.secret else "")
    lines = ["next:", f"  1. open the board: {board}"]
    if not key.secret:
        lines.append("     it asks for a key with the read scope (step 2 makes one)")
    lines += [
        f"  2. make a key: auditstream keys create --name NAME --scope read{data_dir_arg}",
        '  3. read the docs: README.md ("Using it") and `auditstream --help`',
        f"try: auditstream experiment list --url {url} --api-key {key.secret or 'KEY'}",
    ]
    return lines
