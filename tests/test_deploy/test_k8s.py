"""deploy/k8s: valid against the Kubernetes schemas (kubernetes-validate, offline), and coherent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from core.settings import Settings
from schemas.topics import all_topics
from tests.test_deploy.common import DEPLOY, K8S, compose, load_yaml, load_yaml_all, python_module, run

# The oldest Kubernetes we claim to support, and the newest the validator knows.
VERSIONS = ("1.30.0", None)


def manifests() -> list[Path]:
    return sorted(p for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml")


def resources() -> list[dict[str, Any]]:
    return [doc for path in manifests() for doc in load_yaml_all(path)]


def find(kind: str, name: str) -> dict[str, Any]:
    return next(r for r in resources() if r["kind"] == kind and r["metadata"]["name"] == name)


def containers(resource: dict[str, Any]) -> list[dict[str, Any]]:
    return list(resource["spec"]["template"]["spec"]["containers"])


def validate(paths: list[Path], version: str | None) -> Any:
    args = [*python_module("kubernetes_validate"), "--strict", "--quiet"]
    if version:
        args += ["-k", version]
    return run(args + [str(p) for p in paths], timeout=300)


@pytest.mark.parametrize("version", VERSIONS, ids=lambda v: v or "latest")
def test_manifests_are_valid_kubernetes_resources(version: str | None) -> None:
    result = validate(manifests(), version)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_validator_rejects_a_broken_manifest(tmp_path: Path) -> None:
    docs = load_yaml_all(K8S / "ingest.yaml")
    docs[0]["spec"]["replicas"] = "two"
    docs[1]["spec"]["selectr"] = docs[1]["spec"].pop("selector")
    broken = tmp_path / "ingest.yaml"
    broken.write_text(yaml.safe_dump_all(docs))
    result = validate([broken], "1.30.0")
    assert result.returncode != 0
    assert "selectr" in result.stdout + result.stderr and "replicas" in result.stdout + result.stderr


def test_kustomization_lists_every_manifest() -> None:
    kustomization = load_yaml(K8S / "kustomization.yaml")
    assert sorted(kustomization["resources"]) == sorted(p.name for p in manifests())
    assert {r["metadata"].get("namespace") for r in resources() if r["kind"] != "Namespace"} == {
        kustomization["namespace"]
    }


def test_ingest_probes_autoscaling_and_service() -> None:
    deployment = find("Deployment", "auditstream-ingest")
    (container,) = containers(deployment)
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert container["args"] == ["ingest", "--host", "0.0.0.0", "--port", str(ports["http"])]
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    hpa = find("HorizontalPodAutoscaler", "auditstream-ingest")
    target = hpa["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", "auditstream-ingest")
    assert 2 <= hpa["spec"]["minReplicas"] < hpa["spec"]["maxReplicas"]
    assert hpa["spec"]["metrics"][0]["resource"]["name"] == "cpu"
    service = find("Service", "auditstream-ingest")
    assert service["spec"]["ports"][0]["targetPort"] == "http"


def test_selectors_match_their_pods() -> None:
    deployments = [r for r in resources() if r["kind"] == "Deployment"]
    for d in deployments:
        labels = d["spec"]["template"]["metadata"]["labels"]
        assert d["spec"]["selector"]["matchLabels"].items() <= labels.items(), d["metadata"]["name"]
    for r in resources():
        selector = None
        if r["kind"] == "Service":
            selector = r["spec"]["selector"]
        elif r["kind"] == "PodDisruptionBudget":
            selector = r["spec"]["selector"]["matchLabels"]
        if selector is not None:
            matched = [
                d
                for d in deployments
                if selector.items() <= d["spec"]["template"]["metadata"]["labels"].items()
            ]
            assert len(matched) == 1, (
                f"{r['kind']} {r['metadata']['name']} selects {len(matched)} deployments"
            )


def test_worker_runs_in_one_group_within_the_partition_count() -> None:
    config = find("ConfigMap", "auditstream-config")["data"]
    worker = find("Deployment", "auditstream-worker")
    (container,) = containers(worker)
    assert container["args"] == ["worker"]
    assert worker["spec"]["replicas"] <= int(config["AUDITSTREAM_PARTITIONS"])
    metrics_port = next(p["containerPort"] for p in container["ports"] if p["name"] == "metrics")
    assert metrics_port == int(config["AUDITSTREAM_WORKER_METRICS_PORT"])
    assert container["livenessProbe"]["httpGet"]["port"] == "metrics"
    annotations = worker["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/port"] == str(metrics_port)
    assert not [
        r for r in resources() if r["kind"] == "HorizontalPodAutoscaler" and "worker" in r["metadata"]["name"]
    ]


def test_config_holds_only_real_settings_and_references_resolve() -> None:
    settings = set(Settings.model_fields)
    config = find("ConfigMap", "auditstream-config")
    secret = find("Secret", "auditstream-clickhouse")
    for key in [*config["data"], *secret["stringData"]]:
        assert key.startswith("AUDITSTREAM_") and key.removeprefix("AUDITSTREAM_").lower() in settings, key
    defined = {(r["kind"], r["metadata"]["name"]) for r in resources()}
    for r in resources():
        if r["kind"] not in {"Deployment", "Job"}:
            continue
        for c in containers(r):
            for ref in c.get("envFrom", []):
                if "configMapRef" in ref:
                    assert ("ConfigMap", ref["configMapRef"]["name"]) in defined
                if "secretRef" in ref:
                    assert ("Secret", ref["secretRef"]["name"]) in defined
    # The keys Secret is created from a key file (documented), and mounted where the config points.
    ingest = find("Deployment", "auditstream-ingest")
    keys_volume = next(v for v in ingest["spec"]["template"]["spec"]["volumes"] if v["name"] == "keys")
    assert keys_volume["secret"]["secretName"] == "auditstream-keys"
    assert "create secret generic auditstream-keys" in (DEPLOY / "README.md").read_text()
    (container,) = containers(ingest)
    mount = next(m for m in container["volumeMounts"] if m["name"] == "keys")
    assert config["data"]["AUDITSTREAM_KEYS_FILE"].startswith(mount["mountPath"] + "/")


def test_one_image_and_the_migration_job() -> None:
    images = {
        c["image"]
        for r in resources()
        if r["kind"] in {"Deployment", "Job"}
        for c in containers(r)
        if c["image"].split(":")[0].endswith("auditstream")
    }
    assert images == {compose()["services"]["migrate"]["image"]}
    (migrate,) = containers(find("Job", "auditstream-migrate"))
    assert migrate["args"] == ["db", "migrate"]
    (topics,) = containers(find("Job", "auditstream-kafka-topics"))
    script = topics["args"][0]
    assert all(t in script for t in all_topics("auditstream"))
    assert "--replication-factor 3" in script and "$AUDITSTREAM_PARTITIONS" in script


def test_pods_run_unprivileged() -> None:
    for r in resources():
        if r["kind"] not in {"Deployment", "Job"}:
            continue
        assert r["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] is True
        for c in containers(r):
            assert c["securityContext"]["allowPrivilegeEscalation"] is False
            assert c["resources"]["requests"] and c["resources"]["limits"]
