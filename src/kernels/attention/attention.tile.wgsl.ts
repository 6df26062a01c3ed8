// WGSL shared by the tiled training attention kernels (attention.train.wgsl.ts, attention.backward.wgsl.ts):
// text spliced into their main(), so the names it reads are theirs: lid, T, HD, PAD, j0, hi, g, kvStride, k, v, sk, sv.

/** Stage keys j0..j0+T-1 (zeros past hi) of KV head g into sk/sv; the caller puts the barriers around it. */
export const KV_TILE_LOAD = `    for (var i = lid; i < T * HD; i += T * T) {
      let j = i / HD;
      let d = i % HD;
      var kx = 0.0;
      var vx = 0.0;
      if (j0 + j < hi) {
        let b = (j0 + j) * kvStride + g * HD + d;
        kx = k[b];
        vx = v[b];
      }
      sk[j * PAD + d] = kx;
      sv[j * PAD + d] = vx;
    }
`;
