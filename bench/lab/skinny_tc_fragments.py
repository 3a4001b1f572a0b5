"""The lane -> fragment mappings of csrc/kernels/matmul_skinny_tc.cuh checked on the CPU (numpy): mma.sync
m16n8k16 emulated from its PTX fragment layout, fed as the kernel feeds it (K-contiguous and N-contiguous B, K permuted
alike in A), against x @ W^T in float64; and shift_window's funnel shift on bytes. Run: python3
bench/lab/skinny_tc_fragments.py (prints the two max errors, about 1e-14, and "shift ok"). Session 22 ran it before
the kernel's first GPU call."""
import numpy as np
rng = np.random.default_rng(0)

def mma(afr, bfr):
    # afr[lane] = [a0(2 vals), a1, a2, a3]; bfr[lane] = [b0(2), b1(2)]; returns c[lane][4]
    A = np.zeros((16, 16)); B = np.zeros((16, 8))
    for lane in range(32):
        g, t = lane // 4, lane % 4
        a = afr[lane]
        A[g, 2*t:2*t+2] = a[0]; A[g+8, 2*t:2*t+2] = a[1]; A[g, 2*t+8:2*t+10] = a[2]; A[g+8, 2*t+8:2*t+10] = a[3]
        b = bfr[lane]
        B[2*t:2*t+2, g] = b[0]; B[2*t+8:2*t+10, g] = b[1]
    C = A @ B
    out = []
    for lane in range(32):
        g, t = lane // 4, lane % 4
        out.append([C[g, 2*t], C[g, 2*t+1], C[g+8, 2*t], C[g+8, 2*t+1]])
    return np.array(out)

M, N, K = 16, 64, 256
x = rng.standard_normal((M, K)); W = rng.standard_normal((N, K))
ref = x @ W.T

# K-contig: kNT tiles, kU loads; one warp covering rows 0..8kNT-1, all K in steps
kNT, kU = 2, 4
ps = np.zeros((M, 8 * kNT))
for ks in range(0, K, 32 * kU):
    acc = np.zeros((kNT, 32, 4))
    for u in range(kU):
        for h in range(2):
            afr, bfr = [], [[] for _ in range(kNT)]
            for lane in range(32):
                g, c = lane // 4, lane % 4
                k0 = ks + 32 * u + 8 * c
                xv0 = x[g, k0:k0+8]; xv1 = x[g+8, k0:k0+8]
                afr.append([xv0[4*h:4*h+2], xv1[4*h:4*h+2], xv0[4*h+2:4*h+4], xv1[4*h+2:4*h+4]])
                for t in range(kNT):
                    wv = W[8*t + g, k0:k0+8]
                    bfr[t].append([wv[4*h:4*h+2], wv[4*h+2:4*h+4]])
            for t in range(kNT):
                acc[t] += mma(afr, bfr[t])
    for t in range(kNT):
        for lane in range(32):
            g, c = lane // 4, lane % 4
            for q in range(4):
                m, j = g + 8 * (q // 2), 2 * c + q % 2
                ps[m, 8 * t + j] += acc[t, lane, q]
print("K-contig err", np.abs(ps - ref[:, :8*kNT]).max())

# N-contig: 64 columns per warp, kNU groups of 4 rows per step; W^T rows
WT = W.T  # [K, N]
kNU = 2
ps = np.zeros((M, 64))
for ks in range(0, K, 16 * kNU):
    acc = np.zeros((8, 32, 4))
    for u in range(kNU):
        afr = []; bfr = [[] for _ in range(8)]
        for lane in range(32):
            g, c = lane // 4, lane % 4
            r0 = ks + 16 * u + 4 * c
            nc = 8 * g
            wv = [WT[r0 + j, nc:nc+8] for j in range(4)]
            xa0 = x[g, r0:r0+4]; xa1 = x[g+8, r0:r0+4]
            afr.append([xa0[0:2], xa1[0:2], xa0[2:4], xa1[2:4]])
            for i in range(8):
                bfr[i].append([np.array([wv[0][i], wv[1][i]]), np.array([wv[2][i], wv[3][i]])])
        for i in range(8):
            acc[i] += mma(afr, bfr[i])
    for i in range(8):
        for lane in range(32):
            g, c = lane // 4, lane % 4
            for q in range(4):
                m, j = g + 8 * (q // 2), 2 * c + q % 2
                ps[m, 8 * j + i] += acc[i, lane, q]
print("N-contig err", np.abs(ps - ref[:, :64]).max())

# shift_window on bytes
import struct
def shift_window(lo, hi, s):
    v = lo + hi; q = s >> 2; sh = (s & 3) * 8
    u = [(v[i+2] if q & 2 else v[i]) for i in range(6)]
    t = [(u[i+1] if q & 1 else u[i]) for i in range(5)]
    fs = lambda a, b, n: ((b << 32 | a) >> n) & 0xffffffff
    return [fs(t[j], t[j+1], sh) for j in range(4)]
data = bytes(rng.integers(0, 256, 64, dtype=np.uint8))
words = lambda b: list(struct.unpack('<4I', b))
for s in range(0, 16, 2):
    got = shift_window(words(data[0:16]), words(data[16:32]), s)
    assert struct.pack('<4I', *got) == data[s:s+16], s
print("shift ok")
