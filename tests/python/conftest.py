"""Shared fixtures: the real-photo corpus (HDL_CORPUS_DIR or build/corpus; tests/corpus/make_corpus.sh
builds it), small ImageFolders."""

import os
import pathlib
import shutil

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def corpus_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("HDL_CORPUS_DIR", ROOT / "build" / "corpus"))


def _imagenet(split: str) -> pathlib.Path:
    d = corpus_dir() / "imagenet" / split
    if not d.is_dir():
        pytest.skip(f"corpus not found at {d} (run tests/corpus/make_corpus.sh build/corpus, or set HDL_CORPUS_DIR)")
    return d


@pytest.fixture(scope="session")
def val_root() -> pathlib.Path:
    """ImageFolder of real photos (about 300 JPEGs, 154 classes)."""
    return _imagenet("val")


@pytest.fixture(scope="session")
def train_root() -> pathlib.Path:
    return _imagenet("train")


@pytest.fixture()
def small_folder(tmp_path, val_root) -> pathlib.Path:
    """A 3-class ImageFolder of 4 symlinked corpus photos each (12 files)."""
    classes = sorted(p for p in val_root.iterdir() if p.is_dir())
    taken = 0
    for c in classes:
        files = sorted(c.glob("*.JPEG"))
        if len(files) < 1:
            continue
        dst = tmp_path / "folder" / c.name
        dst.mkdir(parents=True)
        for f in files[:4]:
            (dst / f.name).symlink_to(f)
        taken += 1
        if taken == 3:
            break
    # Top up each class to 4 files from train if val has fewer.
    for d in sorted((tmp_path / "folder").iterdir()):
        extra = sorted((_imagenet("train") / d.name).glob("*.JPEG"))
        for f in extra:
            if len(list(d.iterdir())) >= 4:
                break
            (d / ("t_" + f.name)).symlink_to(f)
    return tmp_path / "folder"


def corrupt_copy(src: pathlib.Path, dst: pathlib.Path) -> None:
    """A truncated copy of a JPEG (a file a decoder must reject)."""
    data = src.read_bytes()
    dst.write_bytes(data[: len(data) // 3])


@pytest.fixture()
def corrupt_folder(small_folder) -> pathlib.Path:
    """small_folder plus one file of garbage bytes in the first class."""
    first = sorted(small_folder.iterdir())[0]
    (first / "zz_broken.JPEG").write_bytes(b"\x00not a jpeg at all" * 10)
    return small_folder
