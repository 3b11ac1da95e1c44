"""Outputs reach torch and numpy without copies, and buffers go back to the pool."""

import gc

import numpy as np
import torch

from habana_dataloader import Pipeline, fn


def make(root, output="torch", prefetch_depth=1):
    pipe = Pipeline(batch_size=4, num_threads=2, prefetch_depth=prefetch_depth, output=output)
    with pipe:
        files, labels = fn.file_reader(file_root=str(root))
        pipe.set_outputs(fn.image_decoder(files, resize=[24, 24]), labels)
    return pipe.build()


def test_torch_and_numpy_share_the_batch_buffer(small_folder):
    pipe = make(small_folder)
    images, labels = pipe.run()
    assert images.data_ptr() == pipe.last_info["data_ptrs"][0]
    assert labels.data_ptr() == pipe.last_info["data_ptrs"][1]
    npipe = make(small_folder, output="numpy")
    arrays = npipe.run()
    assert isinstance(arrays[0], np.ndarray) and arrays[0].shape == (4, 24, 24, 3)
    assert arrays[0].__array_interface__["data"][0] == npipe.last_info["data_ptrs"][0]
    assert np.array_equal(arrays[0], images.numpy())


def test_buffers_return_to_the_pool_when_torch_releases_them(small_folder):
    pipe = make(small_folder)
    images, labels = pipe.run()
    held = images.numel() + labels.numel() * 8
    before = pipe.stats()["pool"]["bytes_cached"]
    view = images[1:]  # a view keeps the buffer too
    del images
    gc.collect()
    assert pipe.stats()["pool"]["bytes_cached"] < before + held
    del view, labels
    gc.collect()
    assert pipe.stats()["pool"]["bytes_cached"] >= before + held
    # Steady state: the next batches reuse cached buffers instead of allocating.
    allocations = pipe.stats()["pool"]["allocations"]
    for _ in range(2):
        pipe.run()
    assert pipe.stats()["pool"]["allocations"] == allocations


def test_a_batch_outlives_its_pipeline(small_folder):
    pipe = make(small_folder, prefetch_depth=2)
    images, labels = pipe.run()
    copy = images.clone()
    pipe.close()
    del pipe
    gc.collect()
    junk = [torch.full((4, 24, 24, 3), 7, dtype=torch.uint8) for _ in range(8)]  # reuse freed memory
    assert torch.equal(images, copy) and len(junk) == 8
