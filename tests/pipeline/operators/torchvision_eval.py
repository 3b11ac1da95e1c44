# torchvision's own eval transform for fused_decode_test.cc (run with /usr/bin/python3):
#   torchvision_eval.py OUT RESIZE CROP FILE...
# writes, for each FILE, Resize(RESIZE, antialias=True) + CenterCrop(CROP) of the PIL-decoded
# RGB image as CROP x CROP x 3 uint8 bytes (HWC), concatenated into OUT.
import sys

import torchvision.transforms.functional as F
from PIL import Image


def main():
    out_path, size, crop = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    with open(out_path, "wb") as out:
        for path in sys.argv[4:]:
            with Image.open(path) as im:
                t = F.pil_to_tensor(im.convert("RGB"))
            t = F.center_crop(F.resize(t, [size], antialias=True), [crop, crop])
            out.write(t.permute(1, 2, 0).contiguous().numpy().tobytes())


if __name__ == "__main__":
    main()
