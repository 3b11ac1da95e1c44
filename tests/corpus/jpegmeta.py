"""Tiny JPEG marker walker: SOF type, precision, sampling, restart interval, scans, APPn."""
import struct
SOF = {0xC0:'baseline',0xC1:'extended',0xC2:'progressive',0xC3:'lossless',0xC5:'diff-seq',0xC6:'diff-prog',
       0xC7:'diff-lossless',0xC9:'arith-seq',0xCA:'arith-prog',0xCB:'arith-lossless',0xCD:'arith-diff-seq',
       0xCE:'arith-diff-prog',0xCF:'arith-diff-lossless'}
def jpeg_info(data):
    o = {'sof': '', 'prec': 0, 'w': 0, 'h': 0, 'ncomp': 0, 'sampling': '', 'dri': 0, 'scans': 0, 'app': [], 'err': ''}
    if data[:2] != b'\xff\xd8':
        o['err'] = 'no-SOI'; return o
    i, n, eoi = 2, len(data), False
    while i < n:
        if data[i] != 0xFF: o['err'] = 'bad-marker'; break
        while i < n and data[i] == 0xFF: i += 1
        if i >= n: break
        m = data[i]; i += 1
        if m == 0xD9: eoi = True; break
        if 0xD0 <= m <= 0xD7 or m == 0x01: continue
        if i + 2 > n: o['err'] = 'truncated'; break
        L = struct.unpack('>H', data[i:i+2])[0]; seg = data[i+2:i+L]
        if m in SOF and len(seg) >= 6:
            o['sof'] = SOF[m]; o['prec'] = seg[0]
            o['h'], o['w'] = struct.unpack('>HH', seg[1:5]); o['ncomp'] = seg[5]
            o['sampling'] = ','.join('%dx%d' % (seg[7+3*k] >> 4, seg[7+3*k] & 15) for k in range(seg[5]) if 8+3*k <= len(seg))
        elif m == 0xDD and len(seg) >= 2: o['dri'] = struct.unpack('>H', seg[:2])[0]
        elif 0xE0 <= m <= 0xEF:
            tag = seg[:12].split(b'\0')[0].decode('latin1', 'replace')
            tag = {'http://ns.adobe.com/xap/1.0/': 'XMP'}.get(tag, tag[:12])
            o['app'].append('APP%d:%s' % (m - 0xE0, ''.join(c if c.isalnum() else '_' for c in tag)))
        elif m == 0xDA:
            o['scans'] += 1; i += L
            while i < n - 1 and not (data[i] == 0xFF and data[i+1] not in (0, 0xFF) and not 0xD0 <= data[i+1] <= 0xD7):
                i += 1
            if i >= n - 1: o['err'] = 'truncated-scan'; break
            continue
        i += L
    if not eoi and not o['err']: o['err'] = 'no-EOI'
    return o
def subsampling_name(o):
    s = o['sampling'].split(',')
    if o['ncomp'] == 1: return 'gray'
    if o['ncomp'] == 3 and s[1:] == ['1x1', '1x1']:
        return {'1x1': '444', '2x1': '422', '2x2': '420', '1x2': '440', '4x1': '411', '4x2': '410'}.get(s[0], o['sampling'])
    return o['sampling']
