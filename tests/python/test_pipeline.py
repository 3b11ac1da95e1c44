"""fn namespace, Pipeline / MediaPipe, JSON specs, python_function, error mapping."""

import json
import pathlib

import numpy as np
import pytest
import torch

import habana_dataloader as hd
from habana_dataloader import DataError, MediaPipe, Pipeline, fn


def decode_pipe(root, batch_size=4, seed=1, shuffle=True, **kw):
    pipe = Pipeline(batch_size=batch_size, num_threads=2, seed=seed, **kw)
    with pipe:
        files, labels = fn.file_reader(file_root=str(root), shuffle=shuffle)
        images = fn.image_decoder(files, random_crop="resized", resize=[48, 48])
        images = fn.random_flip(images, probability=0.5)
        pipe.set_outputs(fn.crop_mirror_normalize(images, mean=[0.5, 0.5, 0.5], std=[0.25]), labels)
    return pipe


def test_fn_is_generated_from_every_schema():
    names = set(hd._C.schemas()[i]["name"] for i in range(len(hd._C.schemas())))
    assert names <= set(fn.__all__) and "python_function" in fn.__all__
    assert "file_reader" in names and "image_decoder" in names
    assert fn.image_decoder.__doc__.startswith("### `image_decoder`")
    assert "| `output_type` | str |" in fn.image_decoder.__doc__


def test_argument_errors_name_the_argument():
    files, _ = fn.file_reader(file_root="/nonexistent")
    with pytest.raises(TypeError, match="unexpected keyword argument 'outputtype'.*'output_type'"):
        fn.image_decoder(files, outputtype="rgb")
    with pytest.raises(TypeError, match="'size' must be list\\[int\\]"):
        fn.resize(files, size="big")
    with pytest.raises(ValueError, match="'interpolation' must be one of"):
        fn.resize(files, size=[2, 2], interpolation="cubic")
    with pytest.raises(TypeError, match="takes 1 input"):
        fn.resize(size=[2])
    with pytest.raises(TypeError, match="missing required argument 'size'"):
        fn.resize(files)
    with pytest.raises(TypeError, match="'probability' cannot be a per-sample input|'horizontal'"):
        fn.random_flip(files, probability=fn.coin_flip())
    with pytest.raises(TypeError, match="batch_size"):
        Pipeline(batch_size="8")
    with pytest.raises(ValueError, match="on_error"):
        Pipeline(on_error="ignore")


def test_each_option_is_checked_once_at_the_edge_under_one_name():
    files, _ = fn.file_reader(file_root="/nonexistent")
    images = fn.image_decoder(files)
    assert fn.resize(images, size=[2]).node.stage == "cpu"
    assert fn.resize(images, size=[2], stage="gpu").node.stage == "gpu"
    assert fn.resize(images, size=[2], device="cuda").node.stage == "gpu"  # DALI's spelling, converted at the call
    with pytest.raises(TypeError, match="stage= or device="):
        fn.resize(images, size=[2], stage="gpu", device="gpu")
    with pytest.raises(ValueError, match="argument 'stage' must be one of cpu, mixed, gpu"):
        fn.resize(images, size=[2], stage="tpu")
    # on_error: the C++ parser's words, at the constructor; device: parsed once, at the constructor.
    with pytest.raises(ValueError, match='Pipeline\\(\\): on_error must be "raise" or "skip", got "ignore"'):
        Pipeline(on_error="ignore")
    with pytest.raises(TypeError, match="'on_error' must be str"):
        Pipeline(on_error=None)
    with pytest.raises(ValueError, match="argument 'device'"):
        Pipeline(device="no-such-device")
    p = Pipeline(on_error="skip", device="cuda:1")
    assert p.on_error == "skip" and p.device == "cuda:1" and p._device_id == 1
    assert Pipeline(device=torch.device("cpu")).device == "cpu"


def test_mediapipe_names_do_not_import_fn():
    # fn gathers _ops (the generated functions) and _mediapipe_ops (written on _ops): no loop.
    import ast
    import inspect
    from habana_dataloader import _mediapipe_ops, _ops
    for module in (_ops, _mediapipe_ops):
        tree = ast.parse(inspect.getsource(module))
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert "fn" not in imported and "_mediapipe_ops" not in imported - {module.__name__}, module.__name__
    assert fn.ReadVideoDatasetFromDir is _mediapipe_ops.ReadVideoDatasetFromDir and fn.resize is _ops.resize


def _tree_samples(root):
    import torchvision
    ds = torchvision.datasets.ImageFolder(str(root), loader=lambda p: p)
    return [p for p, _ in ds.samples], [t for _, t in ds.samples]


def _decode_batches(reader_kwargs, batches=3):
    pipe = Pipeline(batch_size=5, num_threads=2, seed=3)
    with pipe:
        files, labels = fn.file_reader(shuffle=True, name="reader", **reader_kwargs)
        pipe.set_outputs(fn.image_decoder(files, resize=[32, 32]), labels)
    out = []
    for _ in range(batches):
        images, labels = pipe.run()
        out.append((images.numpy().copy(), labels.numpy().copy()))
    return pipe, out


def test_files_and_labels_in_memory_read_like_a_file_list(val_root, tmp_path):
    paths, targets = _tree_samples(val_root)
    labels = [1000 + t for t in targets]
    listed = tmp_path / "list.txt"
    listed.write_text("".join(f"{p[1:]} {t}\n" for p, t in zip(paths, labels)))
    _, want = _decode_batches(dict(file_list=str(listed), file_root="/"))
    pipe, got = _decode_batches(dict(files=paths, labels=labels))
    for (a, la), (b, lb) in zip(got, want):
        assert np.array_equal(a, b) and np.array_equal(la, lb)
    assert got[0][1].min() >= 1000
    # Relative to file_root; pathlib paths; a numpy array of labels; no labels: the index.
    rel = [str(pathlib.Path(p).relative_to(val_root)) for p in paths]
    _, again = _decode_batches(dict(files=[pathlib.Path(r) for r in rel], labels=np.array(labels),
                                    file_root=str(val_root)))
    assert all(np.array_equal(a[0], b[0]) for a, b in zip(again, want))
    _, indexed = _decode_batches(dict(files=paths), batches=1)
    assert sorted(indexed[0][1].tolist()) == sorted(set(indexed[0][1].tolist()))  # dataset indices
    # A JSON spec cannot hold them: said, not silently dropped.
    with pytest.raises(ValueError, match='reader "reader": its samples were given in memory'):
        pipe.to_json()


def test_files_errors_name_the_entry(val_root):
    with pytest.raises(ValueError, match=r"samples: files\[1\] is empty"):
        fn.file_reader(files=["a.jpg", ""])
    with pytest.raises(ValueError, match="2 files and 1 labels"):
        fn.file_reader(files=["a.jpg", "b.jpg"], labels=[3])
    with pytest.raises(TypeError, match=r"files\[0\]: a path must be str"):
        fn.file_reader(files=[b"a.jpg"])
    with pytest.raises(TypeError, match="'files' must be a sequence of paths"):
        fn.file_reader(files="a.jpg")
    with pytest.raises(TypeError, match="'labels' needs 'files'"):
        fn.file_reader(file_root=str(val_root), labels=[1])
    with pytest.raises(TypeError, match="labels must be a 1-D sequence of integers"):
        fn.file_reader(files=["a.jpg"], labels=[["x"]])
    # A missing file is a sample error naming it, as for a file list.
    pipe = Pipeline(batch_size=1, num_threads=1)
    with pipe:
        files, labels = fn.file_reader(files=["/nonexistent/x.jpg"])
        pipe.set_outputs(files, labels)
    with pytest.raises(DataError, match="/nonexistent/x.jpg"):
        pipe.run()


def test_build_errors_map_to_value_error(tmp_path):
    pipe = Pipeline(batch_size=2)
    files, labels = fn.file_reader(file_root=str(tmp_path / "missing"))
    pipe.set_outputs(files, labels)
    with pytest.raises(ValueError, match="file_reader"):
        pipe.build()


def test_with_and_define_styles_give_the_same_batches(val_root):
    a = decode_pipe(val_root).build()

    def graph():
        files, labels = fn.file_reader(file_root=str(val_root), shuffle=True)
        images = fn.image_decoder(files, random_crop="resized", resize=[48, 48])
        images = fn.random_flip(images, probability=0.5)
        return fn.crop_mirror_normalize(images, mean=[0.5, 0.5, 0.5], std=[0.25]), labels

    b = Pipeline(batch_size=4, num_threads=1, seed=1).define(graph).build()
    for _ in range(3):
        (x, y), (u, v) = a.run(), b.run()
        assert x.shape == (4, 3, 48, 48) and x.dtype == torch.float32 and y.dtype == torch.int64
        assert torch.equal(x, u) and torch.equal(y, v)


def test_epoch_iteration_state_and_reset(val_root):
    pipe = decode_pipe(val_root, batch_size=64).build()
    n = len(pipe)
    assert n == (len(list(val_root.glob("*/*.JPEG"))) + 63) // 64
    first = [y.clone() for _, y in pipe]
    assert len(first) == n and pipe.epoch == 1
    pipe.reset(0)
    x0, y0 = pipe.run()
    state = pipe.state_dict()
    x1, y1 = pipe.run()
    other = decode_pipe(val_root, batch_size=64).build()
    other.load_state_dict(state)
    u1, v1 = other.run()
    assert torch.equal(y0, first[0]) and torch.equal(x1, u1) and torch.equal(y1, v1)
    stats = pipe.stats()
    assert stats["batches"] >= n + 2 and {o["op"] for o in stats["operators"]} >= {"file_reader", "image_decoder"}
    with pytest.raises(RuntimeError, match="different pipeline"):
        decode_pipe(val_root, batch_size=64, seed=2).build().load_state_dict(state)


class TrainPipe(MediaPipe):
    def __init__(self, root, **kw):
        super().__init__(device="cpu", prefetch_depth=2, batch_size=8, num_threads=2, **kw)
        self.root = root

    def definegraph(self):
        files, labels = fn.file_reader(file_root=str(self.root), shuffle=True)
        return fn.image_decoder(files, resize=[32, 32]), labels


def test_media_pipe_epochs(small_folder):
    pipe = TrainPipe(small_folder)
    pipe.build()
    for _ in range(2):
        pipe.iter_init()
        got = 0
        while True:
            try:
                images, labels = pipe.run()
            except StopIteration:
                break
            assert images.shape[1:] == (32, 32, 3)
            got += images.shape[0]
        assert got == 12


def test_json_round_trip_runs_identically(val_root):
    a = decode_pipe(val_root)
    text = a.to_json()
    doc = json.loads(text)
    assert doc["format"] == "hdl-pipeline-spec" and len(doc["nodes"]) == 4
    b = Pipeline.from_json(text, batch_size=4, num_threads=1, seed=1)
    assert b.to_json() == text
    for _ in range(2):
        (x, y), (u, v) = a.run(), b.run()
        assert torch.equal(x, u) and torch.equal(y, v)
    with pytest.raises(ValueError, match=r"\$\.nodes\[0\]\.args\.size\[1\]"):
        Pipeline.from_json('{"nodes": [{"name": "r", "op": "resize", "args": {"size": [1, "x"]}}], "outputs": []}')
    with pytest.raises(ValueError, match="not valid JSON"):
        Pipeline.from_json("{")
    # The spec dict reaches C++ in one conversion, and the JSON text form reads back as that dict.
    assert hd._C.spec_from_json(text)["nodes"] == doc["nodes"]
    assert hd._C.spec_to_json(hd._C.spec_from_json(text)) == text


def invert(image):
    return 255 - image


def test_python_function_per_sample_and_batch(small_folder):
    pipe = Pipeline(batch_size=4, num_threads=2, seed=0)
    with pipe:
        files, labels = fn.file_reader(file_root=str(small_folder))
        images = fn.image_decoder(files, resize=[16, 16])
        inverted = fn.python_function(images, function=invert, output_shape=[16, 16, 3])
        sizes = fn.python_function(files, function=lambda b: np.array([b.size], dtype=np.int64), dtype="int64")
        doubled = fn.python_function(labels, function=lambda y: y * 2, batch_processing=True)
        pipe.set_outputs(images, inverted, sizes, doubled, labels)
    images, inverted, sizes, doubled, labels = pipe.run()
    assert torch.equal(inverted, 255 - images)
    assert isinstance(sizes, list) and all(s.shape == (1,) and s.item() > 1000 for s in sizes)
    assert torch.equal(doubled, labels * 2)
    # Saved by import path; a lambda needs functions= on load.
    text = pipe.to_json()
    assert "test_pipeline:invert" in text
    with pytest.raises(ValueError, match="lambda"):
        Pipeline.from_json(text)


def test_python_function_errors_are_data_errors(small_folder):
    def boom(x):
        raise KeyError("nope")

    pipe = Pipeline(batch_size=4, num_threads=2)
    with pipe:
        files, labels = fn.file_reader(file_root=str(small_folder))
        pipe.set_outputs(fn.python_function(files, function=boom), labels)
    with pytest.raises(DataError, match="nope") as e:
        pipe.run()
    assert isinstance(e.value, RuntimeError) and e.value.code == "invalid data"


def test_corrupt_file_raise_and_skip(corrupt_folder):
    def make(on_error):
        pipe = Pipeline(batch_size=13, num_threads=2, on_error=on_error)
        with pipe:
            files, labels = fn.file_reader(file_root=str(corrupt_folder))
            pipe.set_outputs(fn.image_decoder(files, resize=[8, 8]), labels)
        return pipe

    with pytest.raises(DataError, match="zz_broken.JPEG") as e:
        make("raise").run()
    assert e.value.code
    skip = make("skip")
    images, labels = skip.run()
    assert images.shape[0] == 13
    stats = skip.stats()
    assert stats["failures"] == 1 and stats["replaced"] == 1 and "zz_broken" in stats["recent_errors"][-1]


def test_set_epoch_order_is_followed_and_resumable(val_root):
    pipe = decode_pipe(val_root, batch_size=3).build()
    size = pipe.dataset_info()["size"]
    order = [size - 1, 0, 7, 7, 3, 12, 5]  # a sampler may repeat indices
    pipe.set_epoch_order(0, np.array(order))
    seen = []
    for _ in pipe:
        seen += pipe.last_info["dataset_indices"]
    assert seen == order and pipe.epoch == 1
    with pytest.raises(RuntimeError, match="no order"):  # never runs an epoch without one
        pipe.run()
    pipe.set_epoch_order(1, torch.tensor([4, 5, 6, 1]))
    pipe.run()
    state = pipe.state_dict()
    assert pipe.last_info["epoch"] == 1 and pipe.last_info["dataset_indices"] == [4, 5, 6]
    other = decode_pipe(val_root, batch_size=3).build()
    other.load_state_dict(state)
    other.set_epoch_order(1, [4, 5, 6, 1])  # after load_state: the position is kept
    other.run()
    assert other.last_info["dataset_indices"] == [1]
    with pytest.raises(ValueError):
        pipe.set_epoch_order(2, [size])
