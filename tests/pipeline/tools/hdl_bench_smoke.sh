#!/usr/bin/env bash
# hdl_bench_smoke.sh HDL_BENCH CORPUS_DIR WORK_DIR: runs hdl-bench on 24 corpus JPEGs (as files and
# as tar shards) and checks its --json report with Python's json module (exit 77 = skipped: no
# corpus). $HDL_CORPUS_DIR, when set, overrides CORPUS_DIR.
set -euo pipefail
BENCH=$1 CORPUS=${HDL_CORPUS_DIR:-$2} WORK=$3
TRAIN=$CORPUS/imagenet/train
if [ ! -d "$TRAIN" ]; then echo "SKIP: no corpus at $TRAIN (tests/corpus/make_corpus.sh)"; exit 77; fi
PY=$(command -v /usr/bin/python3 || command -v python3)
rm -rf "$WORK" && mkdir -p "$WORK"
# A file list of 24 images in 3 classes: "relative/path label".
(cd "$TRAIN" && find . -name '*.JPEG' -o -name '*.jpg' | sort | awk 'NR <= 24 {sub("^\\./", ""); print $0, NR % 3}') > "$WORK/files.txt"
[ "$(wc -l < "$WORK/files.txt")" -eq 24 ] || { echo "corpus has fewer than 24 images"; exit 1; }

check() {  # check NAME EXPECTED_IMAGES EXPECTED_OUTPUT_SUBSTRING -- hdl-bench args...
  local name=$1 images=$2 shape=$3; shift 4
  "$BENCH" "$@" --json --progress > "$WORK/$name.json" 2> "$WORK/$name.err" || {
    echo "hdl-bench $* failed:"; cat "$WORK/$name.err"; exit 1; }
  grep -q "images/s" "$WORK/$name.err" || { echo "$name: no progress bar on stderr"; cat "$WORK/$name.err"; exit 1; }
  "$PY" - "$WORK/$name.json" "$images" "$shape" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
images, shape = int(sys.argv[2]), sys.argv[3]
name = sys.argv[1]
def need(cond, what):
    if not cond:
        sys.exit(f"{name}: {what}\n{json.dumps(r, indent=1)}")
need(r["tool"] == "hdl-bench", "tool")
need(r["images"] == images, f"images {r['images']} != {images}")
need(r["failures"] == 0, "failures")
need(r["images_per_s"] > 0 and r["input_mb_per_s"] > 0, "throughput")
need(0 < r["time_to_first_batch_s"] <= r["total_seconds"], "time to first batch")
need(set(r["stages_seconds"]) == {"read", "decode", "augment", "batch", "copy"}, "stages")
need(r["stages_seconds"]["decode"] > 0 and r["stages_seconds"]["read"] > 0, "decode/read time")
need(all(v >= 0 for v in r["stages_seconds"].values()), "negative stage time")
need(r["cpu"]["cores_used"] > 0, "cpu")
need(r["memory"]["peak_rss_mb"] > 10, "peak RSS")
need(any(shape in o for o in r["outputs"]), f"no output like {shape!r} in {r['outputs']}")
need(sum(e["images"] for e in r["epochs"]) == images, "per-epoch images")
need(r["first_epoch_images_per_s"] > 0, "first epoch rate")
# Steady state: the batches after the first epoch's end; none in a one-epoch run.
if len(r["epochs"]) > 1:
    need(r["steady_images"] == sum(e["images"] for e in r["epochs"][1:]), "steady-state images")
    need(r["steady_images_per_s"] > 0 and 0 < r["steady_seconds"] < r["total_seconds"], "steady-state rate")
else:
    need(r["steady_images_per_s"] is None, "a steady state in a one-epoch run")
print(f"{name}: ok ({r['images']} images, {r['outputs'][0]})")
PYEOF
}

L=$WORK/files.txt
check train 48 "[8, 3, 224, 224] float32 CHW" -- resnet-train "$L" --file-root "$TRAIN" --batch-size 8 --threads 2 --epochs 2
check eval 24 "[8, 3, 64, 64] float16" -- resnet-eval "$L" --file-root "$TRAIN" --batch-size 8 --threads 1 --size 64 --resize 72 --dtype float16
check hwc 16 "[8, 96, 96, 3] uint8 HWC" -- resnet-train "$L" --file-root "$TRAIN" --batch-size 8 --iterations 2 --warmup 0 --size 96 --dtype uint8 --layout HWC
check decode 24 "ragged x8 uint8" -- decode "$L" --file-root "$TRAIN" --batch-size 8 --prefetch 1

# A JSON spec: its reader is pointed at DATA, its crop_mirror_normalize keeps its own dtype.
cat > "$WORK/spec.json" <<'JSON'
{"format": "hdl-pipeline-spec", "version": 1,
 "nodes": [
  {"name": "reader", "op": "file_reader", "stage": "cpu", "inputs": [], "args": {"file_root": "/nonexistent"}, "arg_inputs": {}},
  {"name": "decode", "op": "image_decoder", "stage": "cpu", "inputs": [{"node": "reader", "output": 0}],
   "args": {"resize": [32, 48]}, "arg_inputs": {}},
  {"name": "norm", "op": "crop_mirror_normalize", "stage": "cpu", "inputs": [{"node": "decode", "output": 0}],
   "args": {"dtype": "bfloat16"}, "arg_inputs": {}}],
 "outputs": [{"node": "norm", "output": 0}, {"node": "reader", "output": 1}]}
JSON
check json 24 "[12, 3, 32, 48] bfloat16" -- "$WORK/spec.json" "$L" --file-root "$TRAIN" --batch-size 12

# WebDataset tar shards of the same 24 images (key.jpg + key.cls, as webdataset writes them),
# read by webdataset_reader: DATA is a brace-expanded shard spec.
mkdir -p "$WORK/wds"
awk '{print $1}' "$L" | head -24 | awk '{printf "%s %03d\n", $0, NR}' | while read -r rel k; do
  cp "$TRAIN/$rel" "$WORK/wds/s$k.jpg" && echo $((10#$k % 3)) > "$WORK/wds/s$k.cls"; done
(cd "$WORK/wds" && tar --format=gnu -cf ../shard-0.tar s00[0-9].* s01[0-1].* && tar --format=gnu -cf ../shard-1.tar s01[2-9].* s02*)
check shards 48 "[8, 3, 224, 224] float32 CHW" -- resnet-train "$WORK/shard-{0..1}.tar" --batch-size 8 --threads 2 --epochs 2
[ -f "$WORK/shard-0.tar.idx" ] || { echo "shards: no index sidecar was written"; exit 1; }

# The text report, and mistakes are configuration errors (exit 2) naming the problem.
"$BENCH" resnet-train "$L" --file-root "$TRAIN" --batch-size 8 --iterations 1 --no-progress > "$WORK/text.txt"
for want in "throughput:" "time to first batch" "steady state:" "CPU utilization" "peak RSS" "decode" "failures:"; do
  grep -q "$want" "$WORK/text.txt" || { echo "text report lacks '$want'"; cat "$WORK/text.txt"; exit 1; }
done
expect_error() {  # expect_error MESSAGE -- args...
  local msg=$1; shift 2
  set +e; "$BENCH" "$@" > /dev/null 2> "$WORK/err.txt"; local rc=$?; set -e
  [ "$rc" -eq 2 ] && grep -q "$msg" "$WORK/err.txt" || { echo "hdl-bench $*: rc $rc"; cat "$WORK/err.txt"; exit 1; }
}
expect_error 'unknown pipeline "resnet-tran"' -- resnet-tran "$L"
expect_error 'neither a folder nor a file list' -- decode "$WORK/missing"
# --device cuda without a usable GPU: CUDA's reason (on a GPU machine this check is skipped).
if [ -z "${HDL_HAVE_GPU:-}" ]; then expect_error '^hdl-bench: configuration error: --device cuda: ' -- decode "$L" --device cuda; fi
expect_error 'must be cpu, cuda or cuda:N' -- decode "$L" --device gpu
expect_error 'bad value for --batch-size' -- decode "$L" --batch-size 0
expect_error 'needs --skip-errors' -- decode "$L" --max-failures 5
expect_error 'bad value for --threads: fast' -- decode "$L" --threads fast

# --autotune (threads and prefetch "auto"): the JSON and the text say what it chose.
check auto 48 "[8, 3, 224, 224] float32 CHW" -- resnet-train "$L" --file-root "$TRAIN" --batch-size 8 --autotune --epochs 2
"$PY" -c 'import json,sys; a=json.load(open(sys.argv[1]))["autotune"]
assert a["threads"] and a["prefetch"] and a["autotune_threads"] >= 1 and a["autotune_prefetch_depth"] >= 1, a' "$WORK/auto.json"
"$BENCH" decode "$L" --file-root "$TRAIN" --batch-size 8 --threads auto --prefetch auto --no-progress > "$WORK/auto.txt"
[ "$(grep -c '(autotuned)' "$WORK/auto.txt")" -eq 1 ] || { echo "text report lacks '(autotuned)'"; cat "$WORK/auto.txt"; exit 1; }

# The failure budget: 8 photos and 3 unreadable files, one epoch. Under --skip-errors a budget
# of 3 is enough (the 3 failures are counted), a budget of 2 stops the run as a data error (1).
mkdir -p "$WORK/mixed"
head -8 "$L" | while read -r path label; do ln -sf "$TRAIN/$path" "$WORK/mixed/$(basename "$path")"; done
for i in 1 2 3; do printf 'not an image %d' "$i" > "$WORK/mixed/bad$i.jpg"; done
# Each unreadable file is followed by a photo, which replaces it: one failed attempt each.
(cd "$WORK/mixed" && ls *.JPEG | awk '{print $0, NR % 2} NR % 3 == 1 {print "bad" (NR + 2) / 3 ".jpg", 0}') > "$WORK/mixed.txt"
"$BENCH" decode "$WORK/mixed.txt" --file-root "$WORK/mixed" --batch-size 4 --no-shuffle --skip-errors \
  --max-failures 3 --json > "$WORK/budget.json" 2> "$WORK/budget.err" || {
  echo "--max-failures 3 failed:"; cat "$WORK/budget.err"; exit 1; }
"$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["failures"] == 3, r["failures"]' "$WORK/budget.json"
set +e; "$BENCH" decode "$WORK/mixed.txt" --file-root "$WORK/mixed" --batch-size 4 --no-shuffle --skip-errors \
  --max-failures 2 > /dev/null 2> "$WORK/budget2.err"; rc=$?; set -e
[ "$rc" -eq 1 ] && grep -q "bad" "$WORK/budget2.err" || { echo "--max-failures 2: rc $rc"; cat "$WORK/budget2.err"; exit 1; }
echo "hdl_bench_smoke: all ok"
