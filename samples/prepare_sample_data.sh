#!/usr/bin/env bash
# prepare_sample_data.sh OUT_DIR: a small ImageFolder of real photos for the README's main job.
#
# Photos come from Debian 12 packages that ship them (downloaded with `apt-get download` and
# unpacked with dpkg-deb, never installed); each class is one source:
#   nature    mate-backgrounds        /usr/share/backgrounds/mate/nature/*.jpg
#   wallpaper lomiri-wallpapers-16.04 /usr/share/backgrounds/*.jpg
#   voc       labelme-examples        the PASCAL VOC photos (JPEGImages) of its examples
#   puzzle    palapeli-data, python3-sklearn   puzzle photos, sklearn's china.jpg and flower.jpg
# Each photo gives several ImageNet-like samples (deterministic crops, rescales to a long side
# of 250-500 px, flips; JPEG quality 85-95, 4:2:0), split into train/ and val/.
# Output: OUT_DIR/{train,val}/<class>/*.jpg, SOURCES.tsv, licenses/. Re-runs are instant
# (stamp file); downloads are cached in $CACHE (default OUT_DIR/.cache). Knobs: PER_PHOTO
# (samples per photo, default 12), VAL_EVERY (every n-th sample goes to val, default 8).
# Needs apt-get, dpkg-deb, /usr/bin/python3 with python3-pil (installed when run as root).
set -euo pipefail

OUT=${1:?usage: prepare_sample_data.sh OUT_DIR}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
CACHE=${CACHE:-$OUT/.cache}
PER_PHOTO=${PER_PHOTO:-12}
VAL_EVERY=${VAL_EVERY:-8}
VERSION="v2 per_photo=$PER_PHOTO val_every=$VAL_EVERY"
PY=/usr/bin/python3
log() { echo "prepare_sample_data: $*" >&2; }

if [ -f "$OUT/.complete" ] && [ "$(cat "$OUT/.complete")" = "$VERSION" ]; then
  log "$OUT is ready ($(find "$OUT/train" "$OUT/val" -name '*.jpg' | wc -l) images)"
  exit 0
fi

if ! $PY -c 'import PIL' 2>/dev/null; then
  if [ "$(id -u)" -eq 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-pil >/dev/null
  else
    log "needs python3-pil: sudo apt-get install python3-pil"; exit 1
  fi
fi

PACKAGES=(mate-backgrounds lomiri-wallpapers-16.04 labelme-examples palapeli-data python3-sklearn)
mkdir -p "$CACHE/debs" "$CACHE/tree"
for pkg in "${PACKAGES[@]}"; do
  if ! ls "$CACHE/debs/${pkg}"_*.deb >/dev/null 2>&1; then
    log "downloading $pkg"
    (cd "$CACHE/debs" && apt-get download -q "$pkg" >/dev/null 2>&1) || {
      [ "$(id -u)" -eq 0 ] && apt-get update -qq && (cd "$CACHE/debs" && apt-get download -q "$pkg" >/dev/null)
    } || { log "cannot download $pkg (is apt configured for Debian 12?)"; exit 1; }
  fi
  if [ ! -d "$CACHE/tree/$pkg" ]; then
    dpkg-deb -x "$CACHE/debs/${pkg}"_*.deb "$CACHE/tree/$pkg.tmp" && mv "$CACHE/tree/$pkg.tmp" "$CACHE/tree/$pkg"
  fi
done

T="$CACHE/tree"
STAGE="$OUT/.stage"
rm -rf "$STAGE"
mkdir -p "$STAGE/licenses"
{
  printf 'package\tversion\tclass\n'
  for pkg in "${PACKAGES[@]}"; do
    deb=$(ls "$CACHE/debs/${pkg}"_*.deb)
    printf '%s\t%s\t%s\n' "$pkg" "$(dpkg-deb -f "$deb" Version)" \
      "$(case $pkg in mate-*) echo nature;; lomiri-*) echo wallpaper;; labelme-*) echo voc;; *) echo puzzle;; esac)"
    cp "$T/$pkg/usr/share/doc/$pkg/copyright" "$STAGE/licenses/$pkg.copyright" 2>/dev/null || true
  done
} > "$STAGE/SOURCES.tsv"

$PY - "$STAGE" "$PER_PHOTO" "$VAL_EVERY" \
  "nature=$T/mate-backgrounds/usr/share/backgrounds/mate/nature" \
  "wallpaper=$T/lomiri-wallpapers-16.04/usr/share/backgrounds" \
  "voc=$T/labelme-examples/usr/share/doc/labelme-examples/examples" \
  "puzzle=$T/palapeli-data/usr/share/palapeli/collection" \
  "puzzle=$T/python3-sklearn/usr/lib/python3/dist-packages/sklearn/datasets/images" <<'PYEOF'
import hashlib, io, os, random, sys
from PIL import Image

stage, per_photo, val_every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sources = {}
for arg in sys.argv[4:]:
    cls, root = arg.split("=", 1)
    for dirpath, _, files in os.walk(root):
        for f in files:
            if f.lower().endswith((".jpg", ".jpeg")) and (cls != "voc" or "JPEGImages" in dirpath):
                sources.setdefault(cls, []).append(os.path.join(dirpath, f))

rng = random.Random(20261121)
seen = set()
counts = {}
for cls in sorted(sources):
    for path in sorted(sources[cls]):
        data = open(path, "rb").read()
        digest = hashlib.sha1(data).hexdigest()
        stem = os.path.splitext(os.path.basename(path))[0].replace(" ", "_")
        if digest in seen or (cls, stem) in seen:  # labelme ships VOC photos in several examples
            continue
        seen.update([digest, (cls, stem)])
        with Image.open(io.BytesIO(data)) as im:
            im = im.convert("RGB")
        if min(im.size) < 200:
            continue
        for k in range(per_photo):
            w, h = im.size
            area = w * h * rng.uniform(0.25, 1.0)
            aspect = rng.uniform(3 / 4, 4 / 3)
            cw = min(w, int(round((area * aspect) ** 0.5)))
            ch = min(h, int(round((area / aspect) ** 0.5)))
            x, y = rng.randint(0, w - cw), rng.randint(0, h - ch)
            crop = im.crop((x, y, x + cw, y + ch))
            long_side = rng.randint(250, 500)
            s = long_side / max(cw, ch)
            crop = crop.resize((max(1, round(cw * s)), max(1, round(ch * s))), Image.BICUBIC)
            if rng.random() < 0.5:
                crop = crop.transpose(Image.FLIP_LEFT_RIGHT)
            n = counts.get(cls, 0)
            counts[cls] = n + 1
            split = "val" if n % val_every == val_every - 1 else "train"
            out = os.path.join(stage, split, cls, f"{stem}_{k}.jpg")
            os.makedirs(os.path.dirname(out), exist_ok=True)
            crop.save(out, "JPEG", quality=rng.randint(85, 95), subsampling="4:2:0")
print(" ".join(f"{c}={n}" for c, n in sorted(counts.items())), file=sys.stderr)
PYEOF

rm -rf "$OUT/train" "$OUT/val" "$OUT/licenses"
mv "$STAGE/train" "$STAGE/val" "$STAGE/licenses" "$OUT/"
mv "$STAGE/SOURCES.tsv" "$OUT/SOURCES.tsv"
rmdir "$STAGE"
echo "$VERSION" > "$OUT/.complete"
log "train: $(find "$OUT/train" -name '*.jpg' | wc -l) images, val: $(find "$OUT/val" -name '*.jpg' | wc -l) images," \
    "classes: $(ls "$OUT/train" | tr '\n' ' ')," "$(du -sm --exclude=.cache "$OUT" | cut -f1) MB"
