"""``auditstream extension build``: the browser extension, configured for one study deployment."""

from __future__ import annotations

import json
import re
import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit

import typer

from auditstream.cli.common import DataDir, fail, load_settings
from ingest.api_keys import PUBLIC_SCOPES, KeyFile

app = typer.Typer(help="The volunteers' browser extension (extension/).", no_args_is_help=True)

SOURCE = Path(__file__).resolve().parents[2] / "extension"
SHIPPED = ("manifest.json", "background.js", "content.js", "onboarding.html", "onboarding.js", "popup.html",
           "popup.js", "ui.css", "lib")  # fmt: skip
DEFAULT_CONSENT = (
    "This extension takes part in a research study of search engines. On Google and Bing result "
    "pages it may rearrange the first results, or hide ads and shopping boxes, and it reports which "
    "position you clicked, anonymously.\n\nIt never sends what you searched for, which pages you "
    "visited, or any text of the page. You can pause or leave the study at any time from the "
    "toolbar button."
)
_KEY = re.compile(r"^[A-Za-z0-9_.~+/=-]{8,256}$")
_VERSION = re.compile(r"^[0-9]{1,5}(\.[0-9]{1,5}){0,3}$")
_GECKO_ID = re.compile(r"^[A-Za-z0-9._+-]{1,80}@[A-Za-z0-9.-]{1,120}$")
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")


@dataclass(frozen=True)
class Stamp:
    """What makes one study's build its own: its name, version and Firefox add-on id."""

    name: str
    version: str
    firefox_id: str


def _local(host: str) -> bool:
    return host in LOCAL_HOSTS or host.startswith("127.") or host.endswith(".localhost")


def _firefox_id(experiment: str, host: str) -> str:
    name = re.sub(r"[^A-Za-z0-9._+-]", "-", experiment)[:60]
    return f"auditstream-{name}@{host if '.' in host else host + '.localhost'}"


@app.command()
def build(
    study_url: Annotated[str, typer.Option(help="The study's ingest URL, e.g. https://study.example.org")],
    key: Annotated[
        str,
        typer.Option(help="An API key with the ingest scope only (public: it ships inside the extension)"),
    ],
    experiment: Annotated[str, typer.Option(help="The experiment id the extension takes part in")],
    out: Annotated[Path, typer.Option(help="Folder to write the unpacked extension to (replaced)")],
    zip_: Annotated[
        bool, typer.Option("--zip", help="Also write OUT.zip, for a store or for volunteers")
    ] = False,
    study_name: Annotated[
        str, typer.Option(help="The study's name: the extension's name and the onboarding's title")
    ] = "Join the search study",
    version: Annotated[
        str | None,
        typer.Option(help="The extension's version: 1 to 4 dot-separated numbers, higher each release"),
    ] = None,
    firefox_id: Annotated[
        str | None,
        typer.Option(help="Firefox add-on id, NAME@DOMAIN (default: auditstream-EXPERIMENT@study host)"),
    ] = None,
    no_check: Annotated[
        bool,
        typer.Option(
            "--no-check", help="Build without asking the service (its key and experiment checks are skipped)"
        ),
    ] = False,
    consent_file: Annotated[
        Path | None, typer.Option(help="Plain-text consent shown on installation (default: a generic text)")
    ] = None,
    test_marks: Annotated[
        bool,
        typer.Option("--test-marks", help="Mark identified elements with data-auditstream-* (tests only)"),
    ] = False,
    data_dir: DataDir = None,
) -> None:
    """Write a ready-to-load extension for one study (extension/README.md). The key must have
    the ingest scope only (it is public once installed), the service must know the experiment
    (or pass --no-check), and a study URL not on this machine must be https."""
    parts = urlsplit(study_url)
    stamp = _stamp(study_url, study_name, version, firefox_id, experiment)
    _check_key_and_experiment(key, experiment, study_url, data_dir, no_check)
    consent = _consent(consent_file)

    config = {
        "study_url": study_url.rstrip("/"),
        "ingest_key": key,
        "experiment_id": experiment,
        "study_name": study_name,
        "consent_text": consent,
        "test_marks": test_marks,
        "skip_onboarding_tab": False,
    }
    origin = f"{parts.scheme}://{parts.hostname}{f':{parts.port}' if parts.port else ''}/*"
    _write(out, config, origin, stamp)
    typer.echo(f"wrote the extension for experiment {experiment} at {study_url} to {out}", err=True)
    if zip_:
        typer.echo(f"and {_zip(out)}", err=True)


def _check_key_and_experiment(
    key: str, experiment: str, study_url: str, data_dir: Path | None, no_check: bool
) -> None:
    if not _KEY.match(key):
        raise fail("--key does not look like an API key", 2)
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.:=-]{0,63}", experiment):
        raise fail(f"--experiment {experiment!r} is not a valid experiment id", 2)
    _require_public_key(key, study_url, data_dir, ask_service=not no_check)
    if not no_check:
        _require_registered(experiment, key, study_url)


def _consent(consent_file: Path | None) -> str:
    try:
        consent = consent_file.read_text(encoding="utf-8").strip() if consent_file else DEFAULT_CONSENT
    except OSError as exc:
        raise fail(f"cannot read {consent_file}: {exc}", 2) from None
    if not SOURCE.is_dir():
        raise fail(f"the extension's sources are not at {SOURCE} (install auditstream from a checkout)", 2)
    return consent


def _stamp(study_url: str, name: str, version: str | None, firefox_id: str | None, experiment: str) -> Stamp:
    """The study's URL checked (https unless this machine), and its name, version and
    Firefox id as the manifest will carry them."""
    parts = urlsplit(study_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise fail(f"--study-url must be an http(s) URL, not {study_url!r}", 2)
    if parts.scheme == "http" and not _local(parts.hostname):
        raise fail(
            f"--study-url must be https for a study served from {parts.hostname}: volunteers' events "
            "would cross the internet unencrypted (http is for this machine only: localhost, 127.0.0.1)",
            2,
        )
    version = version or json.loads((SOURCE / "manifest.json").read_text())["version"]
    if not _VERSION.match(version) or any(int(n) > 65535 for n in version.split(".")):
        raise fail(f"--version {version!r} is not 1 to 4 dot-separated numbers up to 65535", 2)
    firefox_id = firefox_id or _firefox_id(experiment, parts.hostname)
    if not _GECKO_ID.match(firefox_id):
        raise fail(f"--firefox-id {firefox_id!r} is not of the form name@domain", 2)
    return Stamp(name, version, firefox_id)


def _zip(out: Path) -> Path:
    archive = out.with_suffix(".zip")
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(out.rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(out).as_posix())
    return archive


def _require_public_key(key: str, study_url: str, data_dir: Path | None, ask_service: bool = True) -> None:
    """Refuse a key with any scope beyond ingest: every volunteer gets a copy of it."""
    scopes = _key_scopes(key, study_url, data_dir, ask_service)
    if scopes is None:
        typer.echo("warning: --no-check: the key's scopes were not checked (not in the key file)", err=True)
        return
    if set(scopes) != set(PUBLIC_SCOPES):
        extra = sorted(set(scopes) - PUBLIC_SCOPES)
        raise fail(
            f"--key has the scopes {', '.join(scopes)}: an extension ships its key to every volunteer, "
            f"so it must have the ingest scope only{f' (not {extra})' if extra else ''}. Make one with "
            "`auditstream keys create --name extension --scope ingest`",
            2,
        )


def _key_scopes(key: str, study_url: str, data_dir: Path | None, ask_service: bool) -> tuple[str, ...] | None:
    """The key's scopes: from the local key file when it is there, else from the service
    (None: not in the file, and the service is not to be asked)."""
    import urllib.error
    import urllib.request

    local = KeyFile(load_settings(data_dir=data_dir).resolved_keys_file).lookup(key)
    if local is not None:
        return local.scopes
    if not ask_service:
        return None
    request = urllib.request.Request(
        study_url.rstrip("/") + "/v1/keys/self", headers={"Authorization": f"Bearer {key}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            return tuple(json.loads(resp.read())["scopes"])
    except urllib.error.HTTPError as exc:
        if exc.code == 401:
            raise fail(f"the service at {study_url} does not know --key (or it was revoked)", 2) from None
        raise fail(f"the service at {study_url} answered {exc.code} asking for the key's scopes", 2) from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise fail(
            f"cannot check the key's scopes: it is not in the data directory's key file and "
            f"{study_url} did not answer ({type(exc).__name__}); build where either can be read",
            2,
        ) from None


def _require_registered(experiment: str, key: str, study_url: str) -> None:
    """Refuse an experiment the service does not know: the extension would enroll volunteers
    whose events no report counts (and whose arms nobody checks)."""
    import urllib.error
    import urllib.parse
    import urllib.request

    path = f"/v1/experiments/{urllib.parse.quote(experiment, safe='')}/config"
    request = urllib.request.Request(study_url.rstrip("/") + path, headers={"Authorization": f"Bearer {key}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            resp.read()
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            raise fail(
                f"the service at {study_url} has no experiment {experiment!r}: register it first "
                f"(`auditstream experiment create {experiment} ...`)",
                2,
            ) from None
        answer = f"the service at {study_url} answered {exc.code} asking for experiment {experiment!r}"
        raise fail(answer, 2) from None
    except OSError as exc:
        raise fail(
            f"cannot check that experiment {experiment!r} is registered: {study_url} did not answer "
            f"({type(exc).__name__}); build where it does, or pass --no-check",
            2,
        ) from None


def _write(out: Path, config: dict[str, object], origin: str, stamp: Stamp) -> None:
    """The extension's files, its rules exported now, its options, and host access to ``origin``."""
    from collectors.serp.rulebook import export_rules, rules_engines

    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for name in SHIPPED:
        source = SOURCE / name
        if source.is_dir():
            shutil.copytree(source, out / name)
        else:
            shutil.copy2(source, out / name)
    (out / "rules").mkdir()
    for engine in rules_engines():
        (out / "rules" / f"{engine}.json").write_text(json.dumps(export_rules(engine), indent=2) + "\n")
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    manifest = json.loads((SOURCE / "manifest.json").read_text())
    manifest["host_permissions"] = [p for p in manifest["host_permissions"] if "127.0.0.1" not in p] + [
        origin
    ]
    manifest["name"] = stamp.name[:75] + (" (test build)" if config["test_marks"] else "")
    manifest["version"] = stamp.version
    manifest["action"]["default_title"] = stamp.name[:75]
    manifest["browser_specific_settings"]["gecko"]["id"] = stamp.firefox_id
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
