#!/usr/bin/env python3
# A/B in one run: the pipelines HabanaDataLoader maps torchvision's resnet chains to, with
# pillow=True (Pillow's integer resize, bit-exact with PIL.Image.resize: what the loader passes)
# and pillow=False (the float tensor kernel, within 1 grey level):
#   train: fused RandomResizedCrop 224 + flip + normalize
#   eval:  fused Resize 256 + CenterCrop 224 + normalize
#   python3 samples/benchmark/pillow_resize_ab.py build/corpus/imagenet/train
import statistics
import sys
import time

from habana_dataloader import Pipeline, fn

root = sys.argv[1]
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def run(chain, pillow, epochs=2):
    with Pipeline(batch_size=64, num_threads=2, seed=0) as p:
        files, labels = fn.file_reader(file_root=root, shuffle=chain == "train")
        if chain == "train":
            img = fn.image_decoder(files, random_crop="resized", resize=[224, 224], pillow=pillow)
            x = fn.crop_mirror_normalize(img, mirror=fn.coin_flip(probability=0.5), mean=MEAN, std=STD)
        else:
            img = fn.image_decoder(files, resize=[256], center_crop=[224, 224], pillow=pillow)
            x = fn.crop_mirror_normalize(img, mean=MEAN, std=STD)
        p.set_outputs(x, labels)
        p.build()
        n = 0
        for b in p:  # epoch 0: JPEG indexes built
            pass
        t = time.perf_counter()
        for e in range(epochs):
            for b in p:
                n += b[1].shape[0]
        return n / (time.perf_counter() - t)


for chain in ("train", "eval"):
    res = {True: [], False: []}
    for r in range(3):
        for pil in (False, True):
            res[pil].append(run(chain, pil))
    for k, v in res.items():
        print(chain, "pillow", k, ["%.0f" % x for x in v])
    print(chain, "ratio pillow/tensor (median of rounds): %.3f" %
          statistics.median(a / b for a, b in zip(res[True], res[False])))
