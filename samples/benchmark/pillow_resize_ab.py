#!/usr/bin/env python3
# A/B in one run: the resnet-train pipeline the loader maps (fused RandomResizedCrop 224 + flip +
# normalize), with pillow=True (what HabanaDataLoader now passes) and pillow=False.
import time, sys
from habana_dataloader import Pipeline, fn
root = sys.argv[1]
def run(pillow, epochs=2):
    with Pipeline(batch_size=64, num_threads=2, seed=0) as p:
        files, labels = fn.file_reader(file_root=root, shuffle=True)
        img = fn.image_decoder(files, random_crop="resized", resize=[224, 224], pillow=pillow)
        flip = fn.coin_flip(probability=0.5)
        x = fn.crop_mirror_normalize(img, mirror=flip, mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
        p.set_outputs(x, labels)
        p.build()
        n = 0
        for b in p: pass  # epoch 0: JPEG indexes built
        t = time.perf_counter()
        for e in range(epochs):
            for b in p: n += b[1].shape[0]
        return n / (time.perf_counter() - t)
res = {True: [], False: []}
for r in range(3):
    for pil in (False, True):
        res[pil].append(run(pil))
for k, v in res.items(): print("pillow", k, ["%.0f" % x for x in v])
import statistics
print("ratio pillow/tensor (median of rounds): %.3f" % statistics.median(a / b for a, b in zip(res[True], res[False])))
