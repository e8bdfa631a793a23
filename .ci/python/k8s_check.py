"""Check the Kubernetes launcher (launchers/kubernetes/*.yaml) without a cluster.

1. Every manifest is loaded into the official client's model of its kind (V1Job,
   V1PersistentVolumeClaim), which checks required fields and types, and serialized back:
   a key the model does not know (a misspelt field) is dropped on the way, and named here.
2. What the chain relies on: Indexed Jobs with completions = parallelism = BATON_PARTS,
   every volume mount backed by a volume, the claim the storage manifest makes, commands
   that use only the environment (no mount path written into them) and `exec baton` for the
   parts, so the container's first process, which Kubernetes sends SIGTERM, is baton.
3. With --run, a chain's Jobs are run in order on this machine: each index's container
   command once, with JOB_COMPLETION_INDEX set, the manifest's environment, and each volume
   a local folder (an environment value under a mount path points into that folder). The
   merged report must equal an unsplit run's byte for byte.

    python k8s_check.py --manifests launchers/kubernetes            # 1 and 2
    python k8s_check.py --manifests … --run chat=chat.toml --run agent=agent.toml \
        --baton target/debug/baton --work DIR
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml
from kubernetes.client import ApiClient

MODELS = {"Job": "V1Job", "PersistentVolumeClaim": "V1PersistentVolumeClaim"}
CHAINS = {
    "chat": ["chat-parts.yaml", "merge-chat.yaml"],
    "agent": [
        "agent-anchors.yaml",
        "agent-thresholds.yaml",
        "agent-handoffs.yaml",
        "merge-agent.yaml",
    ],
}


class CheckError(Exception):
    pass


def dropped_keys(given, kept, path=""):
    """Keys of `given` that did not survive the model's round trip."""
    out = []
    if isinstance(given, dict):
        if not isinstance(kept, dict):
            return [path or "."]
        for key, value in given.items():
            where = f"{path}.{key}" if path else key
            if key not in kept:
                out.append(where)
            else:
                out.extend(dropped_keys(value, kept[key], where))
    elif isinstance(given, list):
        if not isinstance(kept, list) or len(kept) != len(given):
            return [path]
        for i, (g, k) in enumerate(zip(given, kept)):
            out.extend(dropped_keys(g, k, f"{path}[{i}]"))
    return out


def load(path: Path):
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    if not docs:
        raise CheckError(f"{path}: no manifest in it")
    client = ApiClient()
    out = []
    for doc in docs:
        kind = doc.get("kind")
        if kind not in MODELS:
            raise CheckError(f"{path}: kind {kind!r} is none of {sorted(MODELS)}")
        try:
            # The client's own deserializer, as for an API server's answer; the models
            # check required fields and enum values as they are built.
            model = client._ApiClient__deserialize(doc, MODELS[kind])
        except (ValueError, TypeError) as e:
            raise CheckError(f"{path}: not a valid {MODELS[kind]}: {e}") from e
        back = client.sanitize_for_serialization(model)
        lost = dropped_keys(doc, back)
        if lost:
            raise CheckError(
                f"{path}: {MODELS[kind]} has no field {', '.join(lost)} (misspelt?)"
            )
        out.append((kind, doc, model))
    return out


def container_env(container, path):
    env = {}
    for var in container.get("env", []):
        if "value" in var:
            env[var["name"]] = var["value"]
        elif not var.get("valueFrom", {}).get("secretKeyRef", {}).get("optional"):
            raise CheckError(f"{path}: {var['name']} needs a secret that is not optional")
    return env


def check_job(path: Path, doc, claims):
    spec = doc["spec"]
    pod = spec["template"]["spec"]
    name = doc["metadata"]["name"]
    if pod.get("restartPolicy") not in ("OnFailure", "Never"):
        raise CheckError(f"{path}: job {name}: a Job's restartPolicy is OnFailure or Never")
    if len(pod["containers"]) != 1:
        raise CheckError(f"{path}: job {name}: one container expected")
    container = pod["containers"][0]
    env = container_env(container, path)
    parts = env.get("BATON_PARTS")
    if not parts or not parts.isdigit():
        raise CheckError(f"{path}: job {name}: BATON_PARTS is {parts!r}, not a number")
    runs_part = "baton run" in " ".join(container["command"])
    if runs_part != (spec.get("completionMode") == "Indexed"):
        raise CheckError(
            f"{path}: job {name}: completionMode is {spec.get('completionMode')!r}; "
            "a Job of parts (baton run) is Indexed, and only such a Job"
        )
    if runs_part:
        if spec.get("completions") != int(parts) or spec.get("parallelism") != int(parts):
            raise CheckError(
                f"{path}: job {name}: completions {spec.get('completions')} and parallelism "
                f"{spec.get('parallelism')} must both equal BATON_PARTS {parts}"
            )
        if "exec baton run" not in " ".join(container["command"]):
            raise CheckError(f"{path}: job {name}: a part must `exec baton run` (SIGTERM reaches baton)")
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    for mount in container.get("volumeMounts", []):
        volume = volumes.get(mount["name"])
        if volume is None:
            raise CheckError(f"{path}: job {name}: mount {mount['name']} has no volume")
        claim = volume.get("persistentVolumeClaim", {}).get("claimName")
        if claim is not None and claim not in claims:
            raise CheckError(
                f"{path}: job {name}: claim {claim} is not made by the storage manifest ({sorted(claims)})"
            )
        script = " ".join(container["command"])
        if mount["mountPath"] in script:
            raise CheckError(
                f"{path}: job {name}: the command names {mount['mountPath']}; use the environment"
            )
    return name, int(parts)


def validate(manifests: Path):
    loaded = {p.name: load(p) for p in sorted(manifests.glob("*.yaml"))}
    claims = {
        doc["metadata"]["name"]
        for docs in loaded.values()
        for kind, doc, _ in docs
        if kind == "PersistentVolumeClaim"
    }
    jobs = {}
    for file, docs in loaded.items():
        for kind, doc, _ in docs:
            if kind == "Job":
                jobs[file] = (doc, *check_job(manifests / file, doc, claims))
    for chain, files in CHAINS.items():
        missing = [f for f in files if f not in jobs]
        if missing:
            raise CheckError(f"the {chain} chain misses {', '.join(missing)}")
        counts = {jobs[f][2] for f in files}
        if len(counts) != 1:
            raise CheckError(f"the {chain} chain's Jobs disagree on BATON_PARTS: {sorted(counts)}")
    print(
        f"k8s-check: {sum(len(d) for d in loaded.values())} manifests in {len(loaded)} files load "
        f"into the client's models with no field dropped ({', '.join(sorted(loaded))})",
        file=sys.stderr,
    )
    return jobs


def run_chain(chain, jobs, experiment: Path, baton: Path, work: Path):
    if work.exists():
        shutil.rmtree(work)
    volumes = work / "volumes"
    for file in CHAINS[chain]:
        doc = jobs[file][0]
        spec = doc["spec"]
        pod = spec["template"]["spec"]
        container = pod["containers"][0]
        env = container_env(container, file)
        local = {}
        for mount in container.get("volumeMounts", []):
            folder = volumes / mount["name"]
            volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
            if "configMap" in volume:
                # the ConfigMap the README makes: one key, experiment.toml
                folder.mkdir(parents=True, exist_ok=True)
                shutil.copy(experiment, folder / "experiment.toml")
            folder.mkdir(parents=True, exist_ok=True)
            local[mount["mountPath"].rstrip("/")] = str(folder)
        for key, value in env.items():
            for mount_path, folder in local.items():
                if value == mount_path or value.startswith(mount_path + "/"):
                    env[key] = folder + value[len(mount_path):]
        indexed = spec.get("completionMode") == "Indexed"
        indexes = range(spec["completions"]) if indexed else [None]
        for index in indexes:
            run_env = {
                "PATH": f"{baton.parent}:/usr/local/bin:/usr/bin:/bin",
                "HOME": os.environ.get("HOME", "/root"),
                "LANG": "C.UTF-8",
                **env,
            }
            label = f"{file}" + (f" index {index}" if index is not None else "")
            if index is not None:
                run_env["JOB_COMPLETION_INDEX"] = str(index)
            log = work / "logs" / (file.removesuffix(".yaml") + ("" if index is None else f"-{index}") + ".log")
            log.parent.mkdir(parents=True, exist_ok=True)
            started = time.monotonic()
            with open(log, "w") as out:
                status = subprocess.run(
                    container["command"], env=run_env, cwd=work, stdout=out, stderr=subprocess.STDOUT
                ).returncode
            took = time.monotonic() - started
            if status != 0:
                tail = log.read_text().splitlines()[-15:]
                raise CheckError(f"{label}: the container command exited {status}:\n" + "\n".join(tail))
            print(f"k8s-check: {chain}: {label}: exit 0 in {took:.1f} s", file=sys.stderr)
    results = Path(next(v for k, v in env.items() if k == "BATON_RESULTS"))
    merged = results / "report.md"
    whole = work / "whole"
    status = subprocess.run(
        [str(baton), "run", str(experiment), "--out", str(whole), "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    if status.returncode != 0:
        raise CheckError(f"{chain}: the unsplit run exited {status.returncode}: {status.stderr[-2000:]}")
    whole_md = work / "whole.md"
    subprocess.run(
        [str(baton), "report", str(whole), "--out", str(whole_md)],
        check=True,
        stderr=subprocess.DEVNULL,
    )
    if merged.read_bytes() != whole_md.read_bytes():
        raise CheckError(f"{chain}: {merged} differs from the unsplit run's report {whole_md}")
    print(
        f"k8s-check: {chain}: the merged report equals the unsplit run's, byte for byte "
        f"({len(whole_md.read_bytes())} B)",
        file=sys.stderr,
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manifests", type=Path, required=True)
    parser.add_argument(
        "--run",
        action="append",
        default=[],
        metavar="CHAIN=EXPERIMENT",
        help=f"run a chain ({', '.join(sorted(CHAINS))}) on an experiment file",
    )
    parser.add_argument("--baton", type=Path)
    parser.add_argument("--work", type=Path, help="one folder per chain is made in it")
    args = parser.parse_args()
    runs = []
    for given in args.run:
        chain, _, experiment = given.partition("=")
        if chain not in CHAINS or not experiment:
            parser.error(f"--run {given}: write CHAIN=EXPERIMENT, CHAIN one of {sorted(CHAINS)}")
        runs.append((chain, Path(experiment)))
    if runs and not (args.baton and args.work):
        parser.error("--run needs --baton and --work")
    try:
        jobs = validate(args.manifests)
        for chain, experiment in runs:
            run_chain(chain, jobs, experiment.resolve(), args.baton.resolve(), (args.work / chain).resolve())
    except CheckError as e:
        print(f"k8s-check: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
