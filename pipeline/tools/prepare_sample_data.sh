#!/usr/bin/env bash
# prepare_sample_data.sh -- build a small ImageFolder sample dataset of REAL photos taken from
# Debian 12 (bookworm) packages. The packages are only downloaded (apt-get download) and unpacked
# (dpkg-deb), never installed.
#
#   usage: pipeline/tools/prepare_sample_data.sh OUT_DIR
#
# Output:
#   OUT_DIR/train/<class>/*.jpg   ~500 JPEGs  (classes: animals landscapes objects people plants)
#   OUT_DIR/val/<class>/*.jpg     ~80 JPEGs   (made from photos that train never sees)
#   OUT_DIR/manifest.tsv          one row per image: split, path, source package + file, crop, size, quality
#   OUT_DIR/SOURCES.tsv           package, version, license summary, .deb, photos used
#   OUT_DIR/licenses/             each package's copyright file (+ per-image notes where upstream has them)
#
# The 60 source photos are turned into more images by deterministic random crops, rescales and
# flips, re-encoded as baseline JPEG (quality ~90, mostly 4:2:0, mean size roughly ImageNet's).
# Same seed + same package versions + same Pillow/libjpeg => byte-identical output.
#
# Environment knobs (all optional):
#   CACHE=OUT_DIR/.cache   where .debs and unpacked files are kept (~110 MB); re-runs reuse it
#   N_TRAIN=500 N_VAL=80   images per split (spread evenly over the 5 classes)
#   SEED=20240601          generator seed
#   GRAY=1                 keep the one grayscale source photo as 1-channel JPEGs (0: encode it as RGB)
#   JOBS=$(nproc)          worker processes
#   FORCE=1                rebuild even if OUT_DIR is already complete
#   KEEP_DEBS=1            0: delete the downloaded .debs after unpacking (cache ~36 MB instead of ~140 MB)
#   INSTALL_DEPS=1         when root, apt-get install python3-pil if /usr/bin/python3 lacks PIL
#
# Needs: apt-get, dpkg-deb, tar, /usr/bin/python3 with PIL (Debian package python3-pil).
# Downloading and unpacking are debian_media.sh's, shared with tests/corpus/make_corpus.sh.
set -euo pipefail

GEN_VERSION=3
PY=/usr/bin/python3     # Debian's python: has python3-pil; avoid venv/pyenv shims
export LC_ALL=C

if [ $# -ne 1 ] || [ -z "$1" ] || [ "$1" = -h ] || [ "$1" = --help ]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
fi
mkdir -p "$1"
OUT=$(cd "$1" && pwd)
CACHE=${CACHE:-$OUT/.cache}
N_TRAIN=${N_TRAIN:-500}
N_VAL=${N_VAL:-80}
SEED=${SEED:-20240601}
GRAY=${GRAY:-1}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
FORCE=${FORCE:-0}
DM_NAME=prepare_sample_data
DM_CACHE=$CACHE
# shellcheck source=debian_media.sh
. "$(dirname "$0")/debian_media.sh"     # dm_log, dm_die, dm_install, dm_apt_ready, dm_fetch
log() { dm_log "$@"; }
die() { dm_die "$@"; }

summary() {
  local ntr nva ncl mb
  ntr=$(find "$OUT/train" -type f -name '*.jpg' | wc -l)
  nva=$(find "$OUT/val" -type f -name '*.jpg' | wc -l)
  ncl=$(find "$OUT/train" -mindepth 1 -maxdepth 1 -type d | wc -l)
  mb=$(du -sb "$OUT/train" "$OUT/val" | awk '{s+=$1} END {printf "%.1f", s/1e6}')
  echo "sample data ready in $OUT: train=$ntr val=$nva images, classes=$ncl ($(ls "$OUT/train" | tr '\n' ' ' | sed 's/ $//')), total=${mb} MB" >&2
}

# ---------------------------------------------------------------------------------------------
# 0. already done?
# ---------------------------------------------------------------------------------------------
STAMP_TEXT="prepare_sample_data v$GEN_VERSION seed=$SEED n_train=$N_TRAIN n_val=$N_VAL gray=$GRAY"
if [ "$FORCE" != 1 ] && [ -f "$OUT/.complete" ] && [ "$(cat "$OUT/.complete")" = "$STAMP_TEXT" ] \
   && [ -d "$OUT/train" ] && [ -d "$OUT/val" ]; then
  log "up to date ($STAMP_TEXT); FORCE=1 rebuilds"
  summary
  exit 0
fi

# ---------------------------------------------------------------------------------------------
# 1. tools
# ---------------------------------------------------------------------------------------------
if ! { [ -x "$PY" ] && "$PY" -c 'import PIL' 2>/dev/null; }; then
  dm_install python3-pil
fi
dm_apt_ready kphotoalbum

# ---------------------------------------------------------------------------------------------
# 2. packages (pinned bookworm versions; falls back to the current candidate if a pin is gone)
#    package|version|license summary (of the files used; details in licenses/)|extra files to keep as license notes
# ---------------------------------------------------------------------------------------------
PACKAGES=$(cat <<'EOF'
kphotoalbum|5.9.1-1|GPL-2+|
lomiri-wallpapers-16.04|20.04.0-2|CC-BY-4.0 / CC-BY-SA-4.0 / CC0-1.0 (per file)|
lomiri-wallpapers-20.04|20.04.0-2|CC-BY-SA-3.0|
mate-backgrounds|1.26.0-1|GPL-2+|
palapeli-data|4:22.12.3-1|images Public Domain / GFDL (per-image author and license in the .desktop files); package GPL-2+|usr/share/palapeli/collection/*.desktop
python3-skimage|0.19.3-8|BSD-3-Clause (package); images CC0 / public domain (see notes)|usr/lib/python3/dist-packages/skimage/data/_fetchers.py
python3-sklearn|1.2.1+dfsg-1|BSD-3-Clause (package); images CC-BY-2.0 (see README)|usr/lib/python3/dist-packages/sklearn/datasets/images/README.txt
EOF
)
# class|package|file inside the package (60 photos; 4 of them PNG, one grayscale)
IMAGES=$(cat <<'EOF'
people|kphotoalbum|usr/share/kphotoalbum/demo/anne_helene.jpg
people|kphotoalbum|usr/share/kphotoalbum/demo/bar55.jpg
people|kphotoalbum|usr/share/kphotoalbum/demo/bar55_2.jpg
people|kphotoalbum|usr/share/kphotoalbum/demo/cold_water.jpg
people|kphotoalbum|usr/share/kphotoalbum/demo/grand_canyon_2.jpg
people|kphotoalbum|usr/share/kphotoalbum/demo/jesper.jpg
people|kphotoalbum|usr/share/kphotoalbum/demo/jesper_2.jpg
people|kphotoalbum|usr/share/kphotoalbum/demo/new_wave_2.jpg
people|kphotoalbum|usr/share/kphotoalbum/demo/pool.jpg
people|kphotoalbum|usr/share/kphotoalbum/demo/pool_2.jpg
people|kphotoalbum|usr/share/kphotoalbum/demo/qt-logo.jpg
people|python3-skimage|usr/lib/python3/dist-packages/skimage/data/astronaut.png
people|python3-skimage|usr/lib/python3/dist-packages/skimage/data/camera.png
animals|kphotoalbum|usr/share/kphotoalbum/demo/blackie.jpg
animals|kphotoalbum|usr/share/kphotoalbum/demo/donna.jpg
animals|kphotoalbum|usr/share/kphotoalbum/demo/donna_2.jpg
animals|kphotoalbum|usr/share/kphotoalbum/demo/spiff.jpg
animals|kphotoalbum|usr/share/kphotoalbum/demo/spiff_2.jpg
animals|lomiri-wallpapers-16.04|usr/share/backgrounds/friends_by_Aitzol_Berasategi.jpg
animals|lomiri-wallpapers-16.04|usr/share/backgrounds/Dragonfly_by_Bolly.jpg
animals|lomiri-wallpapers-20.04|usr/share/backgrounds/Kleiber_by_Lukas_Baubkus.jpg
animals|mate-backgrounds|usr/share/backgrounds/mate/nature/LadyBird.jpg
animals|mate-backgrounds|usr/share/backgrounds/mate/nature/TwoWings.jpg
animals|palapeli-data|usr/share/palapeli/collection/european-honey-bee.jpg
animals|palapeli-data|usr/share/palapeli/collection/panther-chameleon-female.jpg
animals|python3-skimage|usr/lib/python3/dist-packages/skimage/data/chelsea.png
landscapes|kphotoalbum|usr/share/kphotoalbum/demo/grand_canyon_3.jpg
landscapes|kphotoalbum|usr/share/kphotoalbum/demo/skagen.jpg
landscapes|kphotoalbum|usr/share/kphotoalbum/demo/skagen_2.jpg
landscapes|kphotoalbum|usr/share/kphotoalbum/demo/snow.jpg
landscapes|kphotoalbum|usr/share/kphotoalbum/demo/sunset.jpg
landscapes|lomiri-wallpapers-16.04|usr/share/backgrounds/aitzgorri_by_Aitzol_Berasategi.jpg
landscapes|lomiri-wallpapers-16.04|usr/share/backgrounds/life_by_Aitzol_Berasategi.jpg
landscapes|lomiri-wallpapers-16.04|usr/share/backgrounds/picosdeeuropa_by_Aitzol_Berasategi.jpg
landscapes|lomiri-wallpapers-16.04|usr/share/backgrounds/sunset_by_Aitzol_Berasategi.jpg
landscapes|lomiri-wallpapers-16.04|usr/share/backgrounds/Bridge_by_Sander_Klootwijk.jpg
landscapes|lomiri-wallpapers-20.04|usr/share/backgrounds/Infinite-Sea_by_Aury88.jpg
landscapes|mate-backgrounds|usr/share/backgrounds/mate/nature/Dune.jpg
landscapes|mate-backgrounds|usr/share/backgrounds/mate/nature/Storm.jpg
landscapes|palapeli-data|usr/share/palapeli/collection/castle-maintenon.jpg
landscapes|palapeli-data|usr/share/palapeli/collection/cincinnati-bridge.jpg
landscapes|python3-sklearn|usr/lib/python3/dist-packages/sklearn/datasets/images/china.jpg
plants|lomiri-wallpapers-16.04|usr/share/backgrounds/seeding_by_Clements_Engelhardt.jpg
plants|mate-backgrounds|usr/share/backgrounds/mate/nature/Blinds.jpg
plants|mate-backgrounds|usr/share/backgrounds/mate/nature/FreshFlower.jpg
plants|mate-backgrounds|usr/share/backgrounds/mate/nature/Garden.jpg
plants|mate-backgrounds|usr/share/backgrounds/mate/nature/GreenMeadow.jpg
plants|mate-backgrounds|usr/share/backgrounds/mate/nature/RainDrops.jpg
plants|mate-backgrounds|usr/share/backgrounds/mate/nature/YellowFlower.jpg
plants|python3-sklearn|usr/lib/python3/dist-packages/sklearn/datasets/images/flower.jpg
objects|lomiri-wallpapers-16.04|usr/share/backgrounds/Picture_0B_by_freespace.jpg
objects|lomiri-wallpapers-16.04|usr/share/backgrounds/Picture_1A_by_freespace.jpg
objects|lomiri-wallpapers-16.04|usr/share/backgrounds/Wine_by_Jakkub_Mede.jpg
objects|lomiri-wallpapers-16.04|usr/share/backgrounds/greentock_by_Peter_Nerlich.jpg
objects|lomiri-wallpapers-16.04|usr/share/backgrounds/free_by_Peter_Nerlich.jpg
objects|mate-backgrounds|usr/share/backgrounds/mate/nature/Aqua.jpg
objects|mate-backgrounds|usr/share/backgrounds/mate/nature/Wood.jpg
objects|palapeli-data|usr/share/palapeli/collection/citrus-fruits.jpg
objects|python3-skimage|usr/lib/python3/dist-packages/skimage/data/coffee.png
objects|python3-skimage|usr/lib/python3/dist-packages/skimage/data/rocket.jpg
EOF
)

mkdir -p "$CACHE"; : > "$CACHE/versions.tsv"
log "$(echo "$PACKAGES" | wc -l) packages (about 110 MB to download when not cached) in $CACHE"
while IFS='|' read -r pkg ver lic extra; do
  members=()
  while IFS='|' read -r _c p f; do [ "$p" = "$pkg" ] && members+=("./$f"); done <<< "$IMAGES"
  for e in $extra; do members+=("./$e"); done
  dm_fetch "$pkg" "$ver" "${members[@]}"     # a member a newer version lacks is reported below
  printf '%s\t%s\t%s\t%s\t%s\n' "$pkg" "$DM_VERSION" "$lic" "$DM_DEB" "$extra" >> "$CACHE/versions.tsv"
done <<< "$PACKAGES"

# ---------------------------------------------------------------------------------------------
# 3. generate into a temp dir, then move into place; the stamp is written last
# ---------------------------------------------------------------------------------------------
rm -rf "$OUT"/.build.* "$OUT/.complete"
BUILD=$OUT/.build.$$
trap 'rm -rf "$BUILD"' EXIT
mkdir -p "$BUILD"
echo "$IMAGES" > "$BUILD/images.txt"
log "generating $N_TRAIN train + $N_VAL val JPEGs with $JOBS workers (seed $SEED)"
"$PY" - "$CACHE" "$BUILD" "$SEED" "$N_TRAIN" "$N_VAL" "$GRAY" "$JOBS" <<'PYEOF'
import ast, hashlib, io, multiprocessing as mp, os, random, shutil, sys
from PIL import Image, ImageOps

cache, build, seed, n_train, n_val, gray, jobs = sys.argv[1:8]
n_train, n_val, gray, jobs = int(n_train), int(n_val), gray == "1", max(1, int(jobs))
WORK_LONG = 2000      # sources are first reduced to at most this long side

def log(msg):
    print(f"[prepare_sample_data] {msg}", file=sys.stderr, flush=True)

srcs = []             # (class, package, member)
for line in open(os.path.join(build, "images.txt")):
    if line.strip():
        c, p, f = line.strip().split("|")
        if os.path.isfile(os.path.join(cache, "root", p, f)):
            srcs.append((c, p, f))
        else:
            log(f"WARNING: {p}: {f} missing in this package version; skipped")
classes = sorted({c for c, _, _ in srcs})

def key(*parts):
    return hashlib.sha256("\0".join(map(str, (seed,) + parts)).encode()).hexdigest()

# hold out ~15% of each class's photos (at least one) for val, so val never shares a photo with train
jobs_by_src = {}      # src -> list of (split, index)
for c in classes:
    # (the grayscale photo stays in train, so the main job sees a 1-channel JPEG now and then)
    members = sorted((s for s in srcs if s[0] == c),
                     key=lambda s: (Image.open(os.path.join(cache, "root", s[1], s[2])).mode == "L",
                                    key("split", s[1], s[2])))
    n_hold = max(1, round(0.15 * len(members)))
    if len(members) < 2:
        sys.exit(f"class {c} has fewer than 2 source photos")
    for split, group, total in (("val", members[:n_hold], n_val), ("train", members[n_hold:], n_train)):
        ci = classes.index(c)
        per_class = total // len(classes) + (ci < total % len(classes))
        group = sorted(group, key=lambda s: s[2])
        for i, s in enumerate(group):
            k = per_class // len(group) + (i < per_class % len(group))
            jobs_by_src.setdefault(s, []).extend((split, j) for j in range(k))

def load(path):
    im = Image.open(path)
    if im.format == "JPEG":
        im.draft(im.mode, (WORK_LONG, WORK_LONG))      # DCT-domain downscale of huge wallpapers
    im = ImageOps.exif_transpose(im)
    if im.mode not in ("RGB", "L"):
        im = im.convert("RGB")
    if im.mode == "L" and not gray:
        im = im.convert("RGB")
    if max(im.size) > WORK_LONG:
        f = WORK_LONG / max(im.size)
        im = im.resize((max(1, round(im.width * f)), max(1, round(im.height * f))), Image.LANCZOS)
    return im

def derive(task):
    (c, p, f), outs = task
    im = load(os.path.join(cache, "root", p, f))
    W, H = im.size
    stem = os.path.splitext(os.path.basename(f))[0].lower().replace("_", "-")
    rows = []
    for split, j in outs:
        r = random.Random(key("img", p, f, split, j))
        # output shape: ImageNet-like (long side mostly 500, 4:3 / 3:2 landscape, some portrait)
        u = r.random()
        long_side = 500 if u < 0.5 else (r.randint(200, 499) if u < 0.85 else r.randint(501, 700))
        ar = r.choice([4 / 3, 4 / 3, 3 / 2, 3 / 2, 1.0, r.uniform(1.1, 1.8)])
        if r.random() < 0.2:
            ar = 1 / ar                                   # portrait
        # crop box of that aspect: linear scale 0.35..1 of the largest box that fits, random position
        bw, bh = (W, W / ar) if W / ar <= H else (H * ar, H)
        t = r.uniform(0.35, 1.0)
        cw, ch = bw * t, bh * t
        x0, y0 = r.uniform(0, W - cw), r.uniform(0, H - ch)
        ow, oh = (long_side, long_side / ar) if ar >= 1 else (long_side * ar, long_side)
        if ow > cw:                                       # never upscale
            ow, oh = cw, ch
        ow, oh = max(16, round(ow)), max(16, round(oh))
        out = im.resize((ow, oh), Image.LANCZOS, box=(x0, y0, x0 + cw, y0 + ch))
        flip = r.random() < 0.5
        if flip:
            out = out.transpose(Image.FLIP_LEFT_RIGHT)
        q = min(97, max(75, round(r.gauss(90, 3))))
        v = r.random()
        sub = 2 if v < 0.85 else (0 if v < 0.95 else 1)  # 4:2:0 / 4:4:4 / 4:2:2
        buf = io.BytesIO()
        out.save(buf, "JPEG", quality=q, subsampling=sub)
        data = buf.getvalue()
        Image.open(io.BytesIO(data)).load()               # must decode
        rel = f"{split}/{c}/{c}_{stem}_{j:03d}.jpg"
        os.makedirs(os.path.dirname(os.path.join(build, rel)), exist_ok=True)
        with open(os.path.join(build, rel), "wb") as fh:
            fh.write(data)
        box = ",".join(str(round(v)) for v in (x0, y0, x0 + cw, y0 + ch))
        rows.append((split, rel, c, p, f, f"{W}x{H}", box, f"{ow}x{oh}", out.mode,
                     {2: "4:2:0", 1: "4:2:2", 0: "4:4:4"}[sub] if out.mode != "L" else "gray",
                     str(q), "1" if flip else "0", str(len(data))))
    return rows

tasks = sorted(jobs_by_src.items())
with mp.get_context("fork").Pool(min(jobs, len(tasks))) as pool:
    rows = [row for rs in pool.imap(derive, tasks) for row in rs]
rows.sort(key=lambda r: r[1])
with open(os.path.join(build, "manifest.tsv"), "w") as fh:
    fh.write("split\tpath\tclass\tpackage\tsource_file\tsource_size_used\tcrop_box\tsize\tmode\tsubsampling\tquality\tflipped\tbytes\n")
    for r in rows:
        fh.write("\t".join(r) + "\n")

# provenance: SOURCES.tsv + licenses/
lic_dir = os.path.join(build, "licenses")
os.makedirs(lic_dir)
used = {}
for (c, p, f) in jobs_by_src:
    used[p] = used.get(p, 0) + 1
with open(os.path.join(build, "SOURCES.tsv"), "w") as fh:
    fh.write("package\tversion\tlicense\tdeb\tphotos_used\timages_made\tcopyright_file\n")
    for line in open(os.path.join(cache, "versions.tsv")):
        p, ver, lic, deb, extra = line.rstrip("\n").split("\t")
        made = sum(1 for r in rows if r[3] == p)
        src_root = os.path.join(cache, "root", p)
        cp = os.path.join(src_root, "usr/share/doc", p, "copyright")
        if os.path.isfile(cp):
            shutil.copyfile(cp, os.path.join(lic_dir, f"{p}.copyright"))
        else:
            log(f"WARNING: {p}: no copyright file found")
        fh.write(f"{p}\t{ver}\t{lic}\t{deb}\t{used.get(p, 0)}\t{made}\tlicenses/{p}.copyright\n")
        for pat in extra.split():
            d = os.path.join(src_root, os.path.dirname(pat))
            names = sorted(os.listdir(d)) if os.path.isdir(d) else []
            for n in names:
                if not __import__("fnmatch").fnmatch(n, os.path.basename(pat)):
                    continue
                src = os.path.join(d, n)
                if n == "_fetchers.py":   # skimage: keep only the per-image notes of the photos used
                    t = ast.parse(open(src).read())
                    with open(os.path.join(lic_dir, f"{p}.image-notes.txt"), "w") as o:
                        for node in t.body:
                            if isinstance(node, ast.FunctionDef) and node.name in ("astronaut", "camera", "chelsea", "coffee", "rocket"):
                                o.write(f"== skimage.data.{node.name}()\n{ast.get_docstring(node)}\n\n")
                else:
                    shutil.copyfile(src, os.path.join(lic_dir, f"{p}.{n}"))
log(f"wrote {len(rows)} images from {len(jobs_by_src)} photos in {len(classes)} classes")
PYEOF
rm -f "$BUILD/images.txt"
for item in train val licenses manifest.tsv SOURCES.tsv; do
  rm -rf "${OUT:?}/$item"
  mv "$BUILD/$item" "$OUT/$item"
done
echo "$STAMP_TEXT" > "$OUT/.complete"
log "done"
summary
