"""How long a pipeline over N files takes to build when its samples are handed over in memory
(fn.file_reader(files=..., labels=...), what HabanaDataLoader does since the typed Python
edge) against the text file list it wrote before (a temporary "path label" file, parsed by
C++). Paths are synthetic (an ImageNet-like tree of N files): building a file_reader pipeline
reads no file.

    PYTHONPATH=build/python python3 samples/benchmark/sample_list_bench.py [--files 1281167] [--repeats 3]

Prints the median seconds of each way (Python's side included: the list building, the file
writing) and their ratio.
"""

import argparse
import os
import statistics
import tempfile
import time

from habana_dataloader import Pipeline, fn


def build(reader_kwargs):
    pipe = Pipeline(batch_size=256, num_threads=1)
    with pipe:
        files, labels = fn.file_reader(shuffle=False, **reader_kwargs)
        pipe.set_outputs(files, labels)
    pipe.build()
    return pipe


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=1281167)  # ImageNet-1k train
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    samples = [(f"/data/imagenet/train/n{c:08d}/n{c:08d}_{i:06d}.JPEG", c)
               for i in range(a.files) for c in [i % 1000]]
    memory, text = [], []
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        paths = [p for p, _ in samples]
        labels = [c for _, c in samples]
        pipe = build(dict(files=paths, labels=labels))
        memory.append(time.perf_counter() - t0)
        assert len(pipe) == (a.files + 255) // 256
        pipe.close()

        t0 = time.perf_counter()
        fd, path = tempfile.mkstemp(suffix=".txt")
        try:
            with os.fdopen(fd, "w") as f:
                for p, c in samples:
                    f.write(f"{p[1:]} {c}\n")
            pipe = build(dict(file_list=path, file_root="/"))
            text.append(time.perf_counter() - t0)
            pipe.close()
        finally:
            os.unlink(path)
    m, t = statistics.median(memory), statistics.median(text)
    print(f"{a.files} files: in memory {m:.3f} s, text file list {t:.3f} s (medians of {a.repeats}): "
          f"{t / m:.2f}x faster in memory")


if __name__ == "__main__":
    main()
