"""Assemble OUT/tests/ from the spec on stdin (tests.spec); write tests/MANIFEST.tsv.

usage: build_tests.py ROOT OUT_TESTS VERSIONS_TSV < spec
ROOT holds the unpacked packages (ROOT/<package>/usr/...); VERSIONS_TSV maps package -> version.
Spec rows: dest|expect|package|path inside the package (or op:base for derived files)|note.
A 'derived' row makes its file from one already in OUT_TESTS (see the ops below), so derived
rows come after the rows they read. MANIFEST.tsv records, per file, the expected outcome, the
marker/format facts, what Pillow does with it, the source and the SHA-256.
"""
import sys, os, shutil, hashlib, subprocess, io, warnings
sys.path.insert(0, os.path.dirname(__file__))
from jpegmeta import jpeg_info, subsampling_name
from PIL import Image
warnings.simplefilter('ignore')
Image.MAX_IMAGE_PIXELS = None
root, out, versions_f = sys.argv[1:4]
ver = dict(l.split('\t')[:2] for l in open(versions_f).read().splitlines())
rows = []
def probe(path):
    data = open(path, 'rb').read()
    info = ''
    if data[:2] == b'\xff\xd8':
        o = jpeg_info(data)
        info = 'JPEG %s p%d %dx%d %s%s%s%s' % (o['sof'] or '?', o['prec'], o['w'], o['h'], subsampling_name(o) if o['ncomp'] else '',
               ' DRI=%d' % o['dri'] if o['dri'] else '', ' scans=%d' % o['scans'] if o['scans'] > 1 else '',
               (' ' + ' '.join(sorted(set(o['app'])))) if o['app'] else '')
        if o['err']: info += ' [' + o['err'] + ']'
    elif data[:8] == b'\x89PNG\r\n\x1a\n':
        import struct
        w, h, bd, ct, _, _, il = struct.unpack('>IIBBBBB', data[16:29])
        info = 'PNG %dx%d depth=%d colortype=%d%s' % (w, h, bd, ct, ' interlaced' if il else '')
    else:
        info = 'other (%s)' % data[:4].hex()
    # does Pillow (libjpeg-turbo 2.1 / libpng) decode it?
    try:
        with Image.open(path) as im:
            if im.width * im.height > 40_000_000: pil = 'PIL:skipped(huge %dx%d)' % im.size
            else: im.load(); pil = 'PIL:ok %s %dx%d' % (im.mode, im.width, im.height)
    except Exception as e:
        pil = 'PIL:error(%s)' % type(e).__name__
    return hashlib.sha256(data).hexdigest(), len(data), info, pil
for line in sys.stdin:
    line = line.rstrip('\n')
    if not line or line.startswith('#'): continue
    dest, expect, pkg, src, note = (line.split('|') + [''] * 5)[:5]
    dst = os.path.join(out, dest); os.makedirs(os.path.dirname(dst), exist_ok=True)
    if pkg == 'derived':
        op, base = src.split(':', 1); basep = os.path.join(out, base)
        srcp = None; pv = 'derived from tests/' + base
        if op == 'arith': data = subprocess.run(['jpegtran', '-arithmetic', '-copy', 'all', basep], capture_output=True, check=True).stdout
        elif op == 'arithprog': data = subprocess.run(['jpegtran', '-arithmetic', '-progressive', basep], capture_output=True, check=True).stdout
        elif op.startswith('restart'): data = subprocess.run(['jpegtran', '-restart', op[7:], basep], capture_output=True, check=True).stdout
        elif op == 'optimize': data = subprocess.run(['jpegtran', '-optimize', '-copy', 'none', basep], capture_output=True, check=True).stdout
        elif op == 'progressive': data = subprocess.run(['jpegtran', '-progressive', basep], capture_output=True, check=True).stdout
        elif op == 'trunc50': b = open(basep, 'rb').read(); data = b[:len(b) // 2]
        elif op == 'trailing': data = open(basep, 'rb').read() + b'\x00' * 64 + b'garbage after EOI' * 8
        elif op == 'zero': data = b''
        elif op == 'headeronly': b = open(basep, 'rb').read(); data = b[:b.find(b'\xff\xda')]
        elif op == 'png_as_jpeg': data = open(basep, 'rb').read()
        elif op == 'bitflip':
            b = bytearray(open(basep, 'rb').read()); sos = b.find(b'\xff\xda')
            for k in range(sos + 200, len(b) - 2, max(1, (len(b) - sos) // 40)): b[k] ^= 0x5A
            data = bytes(b)
        else: raise SystemExit('unknown op ' + op)
        open(dst, 'wb').write(data)
    elif pkg == 'dicom':
        continue  # handled by extract_dicom below
    else:
        srcp = os.path.join(root, pkg, src.lstrip('/'))
        pv = '%s=%s' % (pkg, ver.get(pkg, '?'))
    if srcp is not None:
        if not os.path.isfile(srcp): print('WARN missing', srcp, file=sys.stderr); continue
        shutil.copyfile(srcp, dst)
    sha, size, info, pil = probe(dst)
    rows.append((dest, expect, size, info, pil, pv, src if pkg not in ('derived',) else '', note, sha))
# DICOM-embedded JPEG streams (12-bit extended, lossless, RGB-without-transform) from python3-pydicom test files
sys.path.insert(0, os.path.join(root, 'python3-pydicom/usr/lib/python3/dist-packages'))
try:
    import pydicom
    from pydicom.encaps import generate_pixel_data_frame
    td = os.path.join(root, 'python3-pydicom/usr/lib/python3/dist-packages/pydicom/data/test_files')
    for fn, dest, expect, note in [
        ('JPGExtended.dcm', 'jpeg/exotic/dicom_ct_12bit_extended_sof1.jpg', 'exotic', 'real CT slice, 12-bit extended-sequential Huffman (SOF1, P=12), 1 comp'),
        ('JPEG-lossy.dcm', 'jpeg/exotic/dicom_ct_12bit_extended_sof1_b.jpg', 'exotic', 'same kind, other encoder'),
        ('SC_rgb_jpeg_gdcm.dcm', 'jpeg/exotic/dicom_rgb_lossless_sof3.jpg', 'exotic', 'lossless JPEG (SOF3), 3 comp, synthetic test pattern'),
        ('SC_jpeg_no_color_transform.dcm', 'jpeg/ok/dicom_rgb_no_jfif_no_adobe.jpg', 'ok', 'RGB components with no JFIF/Adobe marker (no colour transform)'),
        ('SC_jpeg_no_color_transform_2.dcm', 'jpeg/ok/dicom_rgb_adobe_transform0.jpg', 'ok', 'RGB components, Adobe APP14 transform=0'),
        ('SC_rgb_small_odd_jpeg.dcm', 'jpeg/ok/dicom_3x3_odd.jpg', 'ok', '3x3 pixels'),
    ]:
        ds = pydicom.dcmread(os.path.join(td, fn))
        frame = next(generate_pixel_data_frame(ds.PixelData, int(getattr(ds, 'NumberOfFrames', 1) or 1)))
        dst = os.path.join(out, dest); os.makedirs(os.path.dirname(dst), exist_ok=True); open(dst, 'wb').write(frame)
        sha, size, info, pil = probe(dst)
        rows.append((dest, expect, size, info, pil, 'python3-pydicom=%s (MIT; JPEG stream cut out of %s)' % (ver.get('python3-pydicom', '?'), fn), 'pydicom/data/test_files/' + fn, note, sha))
except Exception as e:
    print('WARN dicom extraction failed:', e, file=sys.stderr)
with open(os.path.join(out, 'MANIFEST.tsv'), 'w') as f:
    f.write('file\texpect\tbytes\tformat\tpillow_9.4_result\tsource\tsource_path\tnote\tsha256\n')
    for r in sorted(rows): f.write('\t'.join(map(str, r)) + '\n')
bad = [r for r in rows if r[1] == 'ok' and not r[4].startswith('PIL:ok') and not r[4].startswith('PIL:skipped')]
for r in bad: print('NOTE: expected ok but', r[4], r[0], file=sys.stderr)
print('tests: %d files, %.1f MB' % (len(rows), sum(r[2] for r in rows) / 1e6), file=sys.stderr)
