"""num_threads="auto" / prefetch_depth="auto" (tf.data's AUTOTUNE; pipeline/detail/autotune.h):
accepted and checked at every edge, the same batches as fixed settings, says what it chose,
and the HabanaDataLoader default."""

import pytest
import torch
import torchvision
import torchvision.transforms as T

from habana_dataloader import HabanaDataLoader, Pipeline, _C, fn


def pipe_of(root, **kw):
    pipe = Pipeline(batch_size=4, seed=3, **kw)
    with pipe:
        files, labels = fn.file_reader(file_root=str(root), shuffle=True)
        images = fn.image_decoder(files, random_crop="resized", resize=[32, 32])
        images = fn.random_flip(images, probability=0.5)
        pipe.set_outputs(fn.crop_mirror_normalize(images, mean=[0.5, 0.5, 0.5], std=[0.25]), labels)
    return pipe


def epochs(pipe, n):
    out = []
    for _ in range(n):
        out += [tuple(t.clone() for t in batch) for batch in pipe]
    return out


def test_auto_gives_the_same_batches_as_fixed_settings_and_says_what_it_chose(small_folder):
    fixed = pipe_of(small_folder, num_threads=1, prefetch_depth=1)
    tuned = pipe_of(small_folder, num_threads="auto", prefetch_depth="auto")
    assert tuned.autotuned is None  # not built yet
    expected, got = epochs(fixed, 2), epochs(tuned, 2)
    assert len(got) == len(expected) > 0
    for a, b in zip(expected, got):
        assert all(torch.equal(x, y) for x, y in zip(a, b))
    chosen = tuned.autotuned
    assert 1 <= chosen["num_threads"] <= _C.available_cpus()
    assert chosen["prefetch_depth"] >= 1
    stats = tuned.stats()
    assert (stats["autotune_threads"], stats["autotune_prefetch_depth"]) == (chosen["num_threads"], chosen["prefetch_depth"])
    assert fixed.autotuned == {"num_threads": 1, "prefetch_depth": 1}
    assert tuned.num_threads == "auto"  # the option as given
    # A JSON spec carries the graph; "auto" goes with the options.
    again = Pipeline.from_json(tuned.to_json(), batch_size=4, seed=3, num_threads="auto", prefetch_depth="auto")
    assert all(torch.equal(x, y) for x, y in zip(epochs(again, 1)[0], expected[0]))


def test_bad_values_name_the_argument():
    with pytest.raises(ValueError, match="'num_threads' must be an int >= 0 or 'auto', got 'Auto'"):
        Pipeline(num_threads="Auto")
    with pytest.raises(ValueError, match="'prefetch_depth' must be >= 1 or 'auto', got 0"):
        Pipeline(prefetch_depth=0)
    with pytest.raises(TypeError, match="'prefetch_depth' must be int or 'auto', got float"):
        Pipeline(prefetch_depth=2.0)
    with pytest.raises(ValueError, match="'max_threads' must be >= 0"):
        Pipeline(num_threads="auto", max_threads=-1)


def test_loader_tunes_unless_a_thread_count_is_given(val_root):
    ds = torchvision.datasets.ImageFolder(str(val_root), T.Compose([T.RandomResizedCrop(32), T.ToTensor()]))
    default = HabanaDataLoader(ds, batch_size=8, strict=True)
    assert default.num_threads == "auto" and default.autotuned is None
    next(iter(default))
    assert 1 <= default.autotuned["num_threads"] <= _C.available_cpus()
    assert default._pipe.prefetch_depth == "auto"
    # num_workers alone caps auto (torch code sets it for processes); num_threads fixes it.
    capped = HabanaDataLoader(ds, batch_size=8, num_workers=1, strict=True)
    next(iter(capped))
    assert capped.num_threads == "auto" and capped.autotuned["num_threads"] == 1
    fixed = HabanaDataLoader(ds, batch_size=8, num_workers=1, num_threads=2, prefetch_factor=3, strict=True)
    next(iter(fixed))
    assert fixed.autotuned == {"num_threads": 2, "prefetch_depth": 3}
    for loader in (default, capped, fixed):
        loader._drop_pipeline()
