"""Face recognition over a labelled set of images (paper 001, Table 3 'OpenCV' and 'Face-KNN').

    face.py generate LFW_SUBSET.npy OUT_DIR [--identities K] [--gallery G] [--probes P] [--seed S]
    face.py run DATA_DIR [--images N] [--k K]

`run` enrols the gallery (DATA_DIR/gallery/<label>/*) and then, per probe image
(DATA_DIR/probe/<label>/*, at most N, in name order), reads it, finds the largest face with
OpenCV's Haar cascade (haarcascade_frontalface_default), and names it with a k-nearest-neighbour
vote over eigenface features (the face cropped, 48x48, histogram-equalised, projected on the
gallery's principal components; not dlib's embeddings, which need a model download). It prints
one JSON line per probe and a summary line, timing each step with a monotonic clock.

`generate` makes the built-in set offline: the first K faces of scikit-image's `lfw_subset`
(25x25 crops from Labeled Faces in the Wild; each source face is one identity), each placed G+P
times on a background patch from the same file's non-faces, enlarged, moved, turned, lit and
noised differently (a fixed seed: the same files everywhere).
"""

from __future__ import annotations

import time

STARTED = time.monotonic()  # before the imports: what the interpreter's start and imports cost shows

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import cv2  # noqa: E402
import numpy as np  # noqa: E402

IMPORTED = time.monotonic()

FACE_SIDE = 48            # the crop the features are taken from
COMPONENTS = 40           # eigenfaces kept (at most gallery size - 1)
CANVAS = (320, 240)       # a generated image's width and height (a QVGA camera frame)
IMAGE_TYPES = (".png", ".jpg", ".jpeg", ".pgm", ".bmp", ".tif", ".tiff", ".webp")


def cascade() -> cv2.CascadeClassifier:
    path = os.path.join(cv2.data.haarcascades, "haarcascade_frontalface_default.xml")
    c = cv2.CascadeClassifier(path)
    if c.empty():
        sys.exit(f"face.py: cannot load the Haar cascade {path}")
    return c


def largest_face(detector: cv2.CascadeClassifier, grey: np.ndarray):
    found = detector.detectMultiScale(grey, scaleFactor=1.1, minNeighbors=4, minSize=(40, 40))
    if len(found) == 0:
        return None
    return max(found, key=lambda r: r[2] * r[3])


def face_vector(grey: np.ndarray, box) -> np.ndarray:
    x, y, w, h = box
    crop = cv2.resize(grey[y:y + h, x:x + w], (FACE_SIDE, FACE_SIDE), interpolation=cv2.INTER_AREA)
    return cv2.equalizeHist(crop).astype(np.float32).ravel()


def images_of(folder: Path) -> list[tuple[str, Path]]:
    """(label, path) for every image under folder/<label>/, in name order."""
    out = []
    for label_dir in sorted(p for p in folder.iterdir() if p.is_dir()):
        out += [(label_dir.name, f) for f in sorted(label_dir.iterdir()) if f.suffix.lower() in IMAGE_TYPES]
    return out


def run(data_dir: Path, images: int, k: int) -> int:
    threads = int(os.environ.get("THREADS", "0") or 0)
    if threads > 0:
        cv2.setNumThreads(threads)  # the CPUs granted (fair protocol); else OpenCV's own choice
    started = time.monotonic()
    detector = cascade()
    gallery = images_of(data_dir / "gallery")
    probes = images_of(data_dir / "probe")[:images] if images > 0 else images_of(data_dir / "probe")
    if not gallery or not probes:
        sys.exit(f"face.py: {data_dir} needs gallery/<label>/ and probe/<label>/ folders of images")
    load_s = time.monotonic() - started

    t = time.monotonic()
    vectors, labels = [], []
    for label, path in gallery:
        grey = cv2.imread(str(path), cv2.IMREAD_GRAYSCALE)
        box = largest_face(detector, grey) if grey is not None else None
        if box is not None:
            vectors.append(face_vector(grey, box))
            labels.append(label)
    if len(vectors) < 2:
        sys.exit(f"face.py: faces found in {len(vectors)} of {len(gallery)} gallery images; need at least 2")
    data = np.array(vectors)
    mean, basis = cv2.PCACompute(data, mean=None, maxComponents=min(COMPONENTS, len(vectors) - 1))
    enrolled = cv2.PCAProject(data, mean, basis)
    enroll_s = time.monotonic() - t

    correct = detected = 0
    digest = hashlib.sha256()
    t_all = time.monotonic()
    for label, path in probes:
        t0 = time.monotonic()
        grey = cv2.imread(str(path), cv2.IMREAD_GRAYSCALE)
        t1 = time.monotonic()
        box = largest_face(detector, grey) if grey is not None else None
        t2 = time.monotonic()
        predicted = None
        if box is not None:
            detected += 1
            point = cv2.PCAProject(face_vector(grey, box)[None, :], mean, basis)
            distances = np.linalg.norm(enrolled - point, axis=1)
            nearest = np.argsort(distances)[:k]
            votes: dict[str, int] = {}
            for i in nearest:  # majority; a tie goes to the label met first (the nearer)
                votes[labels[i]] = votes.get(labels[i], 0) + 1
            predicted = max(votes, key=lambda name: (votes[name], -list(votes).index(name)))
        t3 = time.monotonic()
        correct += predicted == label
        digest.update(f"{path.name}:{predicted}:{'' if box is None else ','.join(map(str, box))}\n".encode())
        print(json.dumps({"image": f"{label}/{path.name}", "label": label, "predicted": predicted,
                          "box": None if box is None else [int(v) for v in box], "read_ms": (t1 - t0) * 1e3,
                          "detect_ms": (t2 - t1) * 1e3, "recognize_ms": (t3 - t2) * 1e3}))
    total_s = time.monotonic() - t_all
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"summary": True, "images": len(probes), "gallery_images": len(gallery),
                      "gallery_faces": len(vectors), "identities": len(set(labels)), "detected": detected,
                      "correct": correct, "accuracy": correct / len(probes), "k": k,
                      "components": int(basis.shape[0]), "import_s": IMPORTED - STARTED, "load_s": load_s,
                      "enroll_s": enroll_s, "total_s": total_s, "program_s": time.monotonic() - STARTED,
                      "cpu_s": usage.ru_utime + usage.ru_stime, "maxrss_kb": usage.ru_maxrss, "opencv": cv2.__version__, "numpy": np.__version__,
                      "threads": cv2.getNumThreads(), "predictions_sha256": digest.hexdigest()}))
    return 0


def generate(npy: Path, out: Path, identities: int, gallery: int, probes: int, seed: int) -> int:
    patches = np.load(npy)
    faces, backgrounds = patches[:100], patches[100:]
    if identities > len(faces):
        sys.exit(f"face.py: {npy} holds {len(faces)} faces; ask for at most that many identities")
    rng = np.random.default_rng(seed)
    for i in range(identities):
        label = f"lfw-{i:02d}"
        face = (faces[i] * 255).astype(np.float32)
        for j in range(gallery + probes):
            split = "gallery" if j < gallery else "probe"
            bg = cv2.resize((backgrounds[rng.integers(len(backgrounds))] * 255).astype(np.float32),
                            CANVAS, interpolation=cv2.INTER_CUBIC)
            side = int(rng.integers(80, 140))
            big = cv2.resize(face, (side, side), interpolation=cv2.INTER_CUBIC)
            turn = cv2.getRotationMatrix2D((side / 2, side / 2), float(rng.uniform(-6, 6)), 1.0)
            big = cv2.warpAffine(big, turn, (side, side), borderMode=cv2.BORDER_REPLICATE)
            big = big * float(rng.uniform(0.8, 1.2)) + float(rng.uniform(-20, 20))
            # A soft edge, so the face meets the background as in a photo.
            mask = np.zeros((side, side), np.float32)
            cv2.ellipse(mask, (side // 2, side // 2), (side // 2 - 2, side // 2 - 2), 0, 0, 360, 1.0, -1)
            mask = cv2.GaussianBlur(mask, (0, 0), side / 16)
            x = int(rng.integers(4, CANVAS[0] - side - 4))
            y = int(rng.integers(4, CANVAS[1] - side - 4))
            region = bg[y:y + side, x:x + side]
            bg[y:y + side, x:x + side] = mask * big + (1 - mask) * region
            image = np.clip(bg + rng.normal(0, 4, bg.shape), 0, 255).astype(np.uint8)
            folder = out / split / label
            folder.mkdir(parents=True, exist_ok=True)
            cv2.imwrite(str(folder / f"{j:03d}.png"), image)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate")
    g.add_argument("npy", type=Path)
    g.add_argument("out", type=Path)
    g.add_argument("--identities", type=int, default=10)
    g.add_argument("--gallery", type=int, default=5)
    g.add_argument("--probes", type=int, default=10)
    g.add_argument("--seed", type=int, default=1)
    r = sub.add_parser("run")
    r.add_argument("data", type=Path)
    r.add_argument("--images", type=int, default=100)
    r.add_argument("--k", type=int, default=3)
    args = ap.parse_args()
    if args.command == "generate":
        return generate(args.npy, args.out, args.identities, args.gallery, args.probes, args.seed)
    return run(args.data, args.images, args.k)


if __name__ == "__main__":
    sys.exit(main())
