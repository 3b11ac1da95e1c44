"""ImageNet-like ImageFolder benchmark set made from real photos (random crops / rescales / re-encodes).

usage: gen_imagenet.py ROOT OUT_IMAGENET POOL VERSIONS_TSV   (knobs from the environment: see make_corpus.sh)
POOL (imagenet_pool.txt) lists one source photo per class. Output: {train,val}/<wnid>/*.JPEG,
manifest.tsv, classes.tsv, stats.json. Deterministic for a given SEED, package versions and Pillow.
"""
import sys, os, io, json, math, random, hashlib, zlib, warnings
from multiprocessing import Pool
from PIL import Image, ImageOps, ImageEnhance, ImageFilter, ImageStat, ImageChops
warnings.simplefilter('ignore')
Image.MAX_IMAGE_PIXELS = None
root, out, pool_f, versions_f = sys.argv[1:5]
N = int(os.environ.get('N_IMAGES', 3000)); VAL = float(os.environ.get('VAL_FRACTION', 0.1))
SEED = int(os.environ.get('SEED', 20240601)); JOBS = int(os.environ.get('JOBS', os.cpu_count()))
QUIRKS = os.environ.get('IMAGENET_QUIRKS', '0') == '1'
# knobs calibrated so that mean size is ~110 KB (the pool's wallpapers are smoother than Flickr photos, hence q~93)
Q_MEAN = float(os.environ.get('Q_MEAN', 96)); Q_SD = float(os.environ.get('Q_SD', 2))
Q_MIN = int(os.environ.get('Q_MIN', 75)); Q_MAX = int(os.environ.get('Q_MAX', 98))
P444 = float(os.environ.get('P444', 0.10)); SHARPEN = float(os.environ.get('SHARPEN', 1.0)); CANDS = int(os.environ.get('CANDS', 3))
S_POW = float(os.environ.get('S_POW', 0.3)); IOU_MAX = float(os.environ.get('IOU_MAX', 0.85))
P_LONG = [float(x) for x in os.environ.get('P_LONG', '0.72,0.84,0.92').split(',')]   # cumulative: =500, <500, 501-1000, >1000
# GRAIN: share of images that get mild luma grain (sigma 0.8-3 levels, like consumer-camera sensor noise) so that
# entropy per pixel matches Flickr-era ImageNet photos; 0 disables it (pixels then are purely resampled real photos)
GRAIN = float(os.environ.get('GRAIN', 0.9)); GRAIN_MAX = float(os.environ.get('GRAIN_MAX', 8.0))
_NV = __import__('statistics').NormalDist()
def grain(img, rng, sigma):
    lut = [max(0, min(255, round(128 + sigma * _NV.inv_cdf((i + 0.5) / 256)))) for i in range(256)]
    n = Image.frombytes('L', img.size, rng.randbytes(img.width * img.height)).point(lut)
    if img.mode != 'L': n = Image.merge(img.mode, [n] * len(img.getbands()))
    return ImageChops.add(img, n, 1.0, -128)
ver = dict(l.split('\t')[:2] for l in open(versions_f).read().splitlines())
pool = []
for line in open(pool_f):
    line = line.strip()
    if not line or line.startswith('#'): continue
    pkg, path, label = line.split('|')
    p = os.path.join(root, pkg, path.lstrip('/'))
    if os.path.isfile(p): pool.append((pkg, path, label, p))
    else: print('WARN pool file missing:', p, file=sys.stderr)
C = len(pool)
# balanced classes: image counts per class differ by at most 1
per_class = [N // C + (1 if i < N % C else 0) for i in range(C)]
n_cmyk = max(3, round(N * 0.001))          # ImageNet has a few dozen CMYK files; keep a handful here
rng0 = random.Random(SEED)
cmyk_slots = set(rng0.sample(range(N), n_cmyk))
EXIF_TEMPLATE = None

def sample_target(rng):
    r = rng.choices([4/3, 3/2, 1.0, 16/9, 5/4, 2.0], weights=[48, 22, 10, 8, 9, 3])[0] * math.exp(rng.gauss(0, 0.03))
    u = rng.random()
    if u < P_LONG[0]: long_side = 500                       # the ImageNet "500 px on the long side" mode
    elif u < P_LONG[1]: long_side = rng.randint(160, 499)
    elif u < P_LONG[2]: long_side = rng.randint(501, 1000)
    else: long_side = int(1000 * math.exp(rng.uniform(0, math.log(2.6))))   # tail up to ~2600 px
    short = max(64, round(long_side / r))
    return (short, long_side) if rng.random() < 0.22 else (long_side, short)

def iou(a, b):
    ix = max(0, min(a[2], b[2]) - max(a[0], b[0])); iy = max(0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy; ua = (a[2]-a[0])*(a[3]-a[1]) + (b[2]-b[0])*(b[3]-b[1]) - inter
    return inter / ua if ua else 0

def load_source(p):
    im = Image.open(p)
    if im.format == 'JPEG' and max(im.size) > 3000:
        im.draft('RGB', (im.width // 2, im.height // 2))   # fast DCT-domain 1/2 downscale of huge sources
    im = ImageOps.exif_transpose(im)
    icc = im.info.get('icc_profile')
    if im.mode in ('RGBA', 'LA', 'P', 'PA'):
        im = im.convert('RGBA'); bg = Image.new('RGB', im.size, (255, 255, 255)); bg.paste(im, mask=im.getchannel('A')); im = bg
    elif im.mode != 'RGB':
        im = im.convert('RGB')   # 16-bit / gray sources -> 8-bit RGB
    return im, icc

def make_class(args):
    ci, (pkg, path, label, p), count, first_index = args
    rng = random.Random(zlib.crc32(('%d:%s:%s' % (SEED, pkg, path)).encode()))
    src, icc = load_source(p)
    SW, SH = src.size
    # small edge map of the source: used to prefer detailed crops (ImageNet photos are object-centred and busy)
    th = src.convert('L'); th.thumbnail((256, 256)); edges = th.filter(ImageFilter.FIND_EDGES); ex, ey = SW / th.width, SH / th.height
    def detail(b):
        c = edges.crop((int(b[0] / ex), int(b[1] / ey), max(int(b[0] / ex) + 1, int(b[2] / ex)), max(int(b[1] / ey) + 1, int(b[3] / ey))))
        return ImageStat.Stat(c).mean[0]
    boxes, results = [], []
    for k in range(count):
        gidx = first_index + k
        cands = []
        for attempt in range(60):
            w, h = sample_target(rng)
            rt = w / h
            cw_max = min(SW, SH * rt); ch_max = cw_max / rt
            need = (w * h) / (cw_max * ch_max)            # output/crop area ratio at scale 1
            if need > 1:                                   # source too small for this output: shrink output
                f = math.sqrt(rng.uniform(0.35, 0.85) / need); w, h = max(48, round(w * f)), max(48, round(h * f))
                need = (w * h) / (cw_max * ch_max)
            smin = max(0.08, need)
            s = smin + (1 - smin) * (rng.random() ** S_POW)      # crop area fraction of the largest crop with that aspect
            cw, ch = min(SW, cw_max * math.sqrt(s)), min(SH, ch_max * math.sqrt(s))
            x0 = max(0.0, rng.uniform(0, SW - cw)); y0 = max(0.0, rng.uniform(0, SH - ch))
            box = (x0, y0, x0 + cw, y0 + ch)
            flip = rng.random() < 0.5
            if all(iou(box, b) < IOU_MAX or bf != flip for b, bf in boxes) or attempt >= 50:
                cands.append((detail(box), w, h, box, flip))
                if len(cands) == CANDS: break
        # most detailed of CANDS distinct candidates (70%), else the first one
        _, w, h, box, flip = max(cands, key=lambda c: c[0]) if rng.random() < 0.7 else cands[0]
        boxes.append((box, flip))
        img = src.resize((w, h), Image.BICUBIC, box=box, reducing_gap=3.0)
        if flip: img = img.transpose(Image.FLIP_LEFT_RIGHT)
        if (box[2] - box[0]) / w > 1.3 and rng.random() < SHARPEN:   # camera/Flickr-style sharpening after downscale
            img = img.filter(ImageFilter.UnsharpMask(radius=rng.uniform(0.6, 1.2), percent=rng.randint(40, 120), threshold=rng.randint(0, 3)))
        if rng.random() < 0.5:
            img = ImageEnhance.Color(img).enhance(rng.uniform(0.8, 1.2))
            img = ImageEnhance.Brightness(img).enhance(rng.uniform(0.88, 1.12))
            img = ImageEnhance.Contrast(img).enhance(rng.uniform(0.88, 1.12))
        g = 0.0
        if rng.random() < GRAIN:
            g = round(rng.uniform(0.8, GRAIN_MAX), 2); img = grain(img, rng, g)
        # encoding parameters, ImageNet-like mixture
        q = int(round(min(Q_MAX, max(Q_MIN, rng.gauss(Q_MEAN, Q_SD)))))
        u = rng.random()
        sub = 0 if u < P444 else (1 if u < P444 + 0.02 else 2)   # some 4:4:4, 2% 4:2:2, rest 4:2:0
        progressive = rng.random() < 0.03
        optimize = rng.random() < 0.3
        kind = 'rgb'
        if gidx in cmyk_slots: img = img.convert('CMYK'); kind = 'cmyk'
        elif rng.random() < 0.015: img = img.convert('L'); kind = 'gray'
        kw = dict(quality=q, optimize=optimize, progressive=progressive)
        if kind == 'rgb': kw['subsampling'] = sub
        if rng.random() < 0.03:
            ex_ = Image.Exif(); ex_[271] = 'Debian'; ex_[272] = 'corpus-' + label[:20]; ex_[274] = 1; ex_[305] = 'make_corpus.sh'
            kw['exif'] = ex_.tobytes()
        if icc and rng.random() < 0.1: kw['icc_profile'] = icc
        buf = io.BytesIO(); img.save(buf, 'JPEG', **kw); data = buf.getvalue()
        results.append(dict(gidx=gidx, cls=ci, w=w, h=h, q=q, kind=kind, sub=('444', '422', '420')[sub] if kind == 'rgb' else kind,
                            progressive=progressive, optimize=optimize, exif='exif' in kw, icc='icc_profile' in kw, grain=g,
                            crop=[round(v) for v in box], flip=flip, data=data))
    src.close()
    return ci, results

def main():
    wnids = ['n%08d' % (10000000 + 7919 * i) for i in range(C)]    # synset-like ids
    jobs, idx = [], 0
    for ci in range(C):
        jobs.append((ci, pool[ci], per_class[ci], idx)); idx += per_class[ci]
    # biggest sources first for better load balance
    jobs.sort(key=lambda j: -os.path.getsize(j[1][3]))
    rngv = random.Random(SEED + 1)     # stratified split: every class has VAL_FRACTION of its images in val/
    val_ids, start = set(), 0
    for ci in range(C):
        val_ids.update(rngv.sample(range(start, start + per_class[ci]), int(round(per_class[ci] * VAL)))); start += per_class[ci]
    manifest, seen, counts = [], set(), {'train': 0, 'val': 0}
    val_no = 0
    with Pool(JOBS) as P:
        for ci, res in P.imap_unordered(make_class, jobs):
            for r in res:
                data = r.pop('data'); h = hashlib.sha256(data).hexdigest()
                assert h not in seen, 'duplicate output'; seen.add(h)
                split = 'val' if r['gidx'] in val_ids else 'train'
                name = ('ILSVRC2012_val_%08d.JPEG' % (r['gidx'] + 1)) if split == 'val' else '%s_%d.JPEG' % (wnids[ci], r['gidx'])
                rel = os.path.join(split, wnids[ci], name)
                os.makedirs(os.path.join(out, split, wnids[ci]), exist_ok=True)
                with open(os.path.join(out, rel), 'wb') as f: f.write(data)
                counts[split] += 1
                manifest.append(dict(file=rel, wnid=wnids[ci], bytes=len(data), sha256=h, **r))
    if QUIRKS:   # ImageNet's famous oddities: a PNG with a .JPEG name (n02105855_2933) and a CMYK JPEG
        import shutil
        m = next(x for x in manifest if x['file'].startswith('train/') and x['kind'] == 'rgb')
        im = Image.open(os.path.join(out, m['file'])); im.save(os.path.join(out, m['file']), 'PNG'); m['kind'] = 'png-named-JPEG'
    manifest.sort(key=lambda m: m['file'])
    with open(os.path.join(out, 'manifest.tsv'), 'w') as f:
        cols = ['file', 'wnid', 'w', 'h', 'bytes', 'q', 'kind', 'sub', 'progressive', 'optimize', 'exif', 'icc', 'grain', 'flip', 'crop', 'sha256']
        f.write('\t'.join(cols) + '\n')
        for m in manifest: f.write('\t'.join(str(m[c]) for c in cols) + '\n')
    with open(os.path.join(out, 'classes.tsv'), 'w') as f:
        f.write('index\twnid\tlabel\tsource_package\tpackage_version\tsource_path\n')
        for ci, (pkg, path, label, p) in enumerate(pool):
            f.write('%d\t%s\t%s\t%s\t%s\t%s\n' % (ci, wnids[ci], label, pkg, ver.get(pkg, '?'), path))
    n = len(manifest); W = [m['w'] for m in manifest]; H = [m['h'] for m in manifest]; B = [m['bytes'] for m in manifest]
    med = lambda v: sorted(v)[len(v) // 2]
    stats = dict(images=n, classes=C, train=counts['train'], val=counts['val'], mean_w=round(sum(W) / n, 1), mean_h=round(sum(H) / n, 1),
                 median_w=med(W), median_h=med(H), min_side=min(min(W), min(H)), max_side=max(max(W), max(H)),
                 mean_bytes=round(sum(B) / n), median_bytes=med(B), total_mb=round(sum(B) / 1e6, 1),
                 mean_quality=round(sum(m['q'] for m in manifest) / n, 1),
                 kinds={k: sum(1 for m in manifest if m['kind'] == k) for k in sorted({m['kind'] for m in manifest})},
                 subsampling={k: sum(1 for m in manifest if m['sub'] == k) for k in sorted({m['sub'] for m in manifest})},
                 progressive=sum(m['progressive'] for m in manifest), with_exif=sum(m['exif'] for m in manifest),
                 with_icc=sum(m['icc'] for m in manifest), with_grain=sum(1 for m in manifest if m['grain']), seed=SEED)
    json.dump(stats, open(os.path.join(out, 'stats.json'), 'w'), indent=1)
    print(json.dumps(stats), file=sys.stderr)
main()
