"""Our shards and their index sidecars read by NVIDIA DALI's own WebDataset reader
(fn.readers.webdataset with index_paths: DALI parses our "<shard>.idx", wds2idx's v1.2 format
with our stamp after the sample count, which DALI's parser leaves alone), on the CPU: the same
samples, bytes and labels, in the same order, as habana_dataloader reads.

DALI is on PyPI (nvidia-dali-cuda120, 2.4.0 here: about 424 MB, so not in .ci/torch2.sh's pins);
without it the test is skipped:
    build/venv-torch2/bin/pip install --no-deps nvidia-dali-cuda120==2.4.0 astunparse gast \
        libcst makefun nvtx optree six
"""

import pytest

from habana_dataloader import WebDataset, write_shards


def test_dali_reads_our_shards_through_our_index(val_root, tmp_path):
    pytest.importorskip("nvidia.dali", reason="NVIDIA DALI is not installed (pip install nvidia-dali-cuda120)")
    from nvidia.dali import pipeline_def
    import nvidia.dali.fn as dfn

    paths = write_shards(str(val_root), str(tmp_path / "val-%03d.tar"), maxcount=70, index=True)
    assert len(paths) >= 4
    ours = [(s["__key__"], s[[k for k in s if k in ("jpeg", "jpg", "png")][0]], int(s["cls"]))
            for s in WebDataset(paths)]

    @pipeline_def(batch_size=16, num_threads=1, device_id=None)  # the CPU only
    def dali_pipe():
        image, cls = dfn.readers.webdataset(paths=paths, index_paths=[p + ".idx" for p in paths],
                                            ext=["jpeg;jpg;png", "cls"], missing_component_behavior="error",
                                            dtypes=None, name="reader")
        return image, cls

    pipe = dali_pipe()
    pipe.build()
    assert pipe.epoch_size("reader") == len(ours)
    theirs = []
    while len(theirs) < len(ours):
        images, labels = pipe.run()
        for i in range(len(images)):
            theirs.append((images.at(i).tobytes(), int(bytes(labels.at(i).tobytes()).decode().strip())))
    theirs = theirs[: len(ours)]  # DALI pads the last batch by repeating
    assert [b for _, b, _ in ours] == [b for b, _ in theirs]  # bytes, in order: shard, then index order
    assert [c for _, _, c in ours] == [c for _, c in theirs]
