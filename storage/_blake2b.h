/* BLAKE2b with a 16-byte digest, unkeyed, of one buffer (RFC 7693): the content hash.
 *
 * The same digest as Python's hashlib.blake2b(data, digest_size=16), without the
 * hasher object, the copy of the data into a bytes object and the hexdigest call that
 * going through hashlib costs every span (tests/storage/test_blake2b.py compares the
 * two on every length across several blocks).
 */
#ifndef SPANGATE_BLAKE2B_H
#define SPANGATE_BLAKE2B_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define BLAKE2B_BLOCK 128
#define BLAKE2B_DIGEST 16

static const uint64_t blake2b_iv[8] = {
    0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL,
    0xa54ff53a5f1d36f1ULL, 0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL,
    0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL};

static const uint8_t blake2b_sigma[12][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
    {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
    {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
    {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
    {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3}};

static inline uint64_t blake2b_load64(const uint8_t *p) {
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
           (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 |
           (uint64_t)p[7] << 56;
}

#define BLAKE2B_ROTR(x, n) (((x) >> (n)) | ((x) << (64 - (n))))
#define BLAKE2B_G(a, b, c, d, x, y)                \
    do {                                           \
        v[a] = v[a] + v[b] + (x);                  \
        v[d] = BLAKE2B_ROTR(v[d] ^ v[a], 32);      \
        v[c] = v[c] + v[d];                        \
        v[b] = BLAKE2B_ROTR(v[b] ^ v[c], 24);      \
        v[a] = v[a] + v[b] + (y);                  \
        v[d] = BLAKE2B_ROTR(v[d] ^ v[a], 16);      \
        v[c] = v[c] + v[d];                        \
        v[b] = BLAKE2B_ROTR(v[b] ^ v[c], 63);      \
    } while (0)

/* A round of G over the columns, then the diagonals, of v (`G` the scalar or the vector
 * one), each fed its two message words `m` of round r's permutation. */
#define BLAKE2B_ROUND(G, r)                                                 \
    do {                                                                    \
        G(0, 4, 8, 12, m[blake2b_sigma[r][0]], m[blake2b_sigma[r][1]]);     \
        G(1, 5, 9, 13, m[blake2b_sigma[r][2]], m[blake2b_sigma[r][3]]);     \
        G(2, 6, 10, 14, m[blake2b_sigma[r][4]], m[blake2b_sigma[r][5]]);    \
        G(3, 7, 11, 15, m[blake2b_sigma[r][6]], m[blake2b_sigma[r][7]]);    \
        G(0, 5, 10, 15, m[blake2b_sigma[r][8]], m[blake2b_sigma[r][9]]);    \
        G(1, 6, 11, 12, m[blake2b_sigma[r][10]], m[blake2b_sigma[r][11]]);  \
        G(2, 7, 8, 13, m[blake2b_sigma[r][12]], m[blake2b_sigma[r][13]]);   \
        G(3, 4, 9, 14, m[blake2b_sigma[r][14]], m[blake2b_sigma[r][15]]);   \
    } while (0)

/* The twelve rounds, written out: each round's message indexes are then constants. */
#define BLAKE2B_ROUNDS(G)     \
    do {                      \
        BLAKE2B_ROUND(G, 0);  \
        BLAKE2B_ROUND(G, 1);  \
        BLAKE2B_ROUND(G, 2);  \
        BLAKE2B_ROUND(G, 3);  \
        BLAKE2B_ROUND(G, 4);  \
        BLAKE2B_ROUND(G, 5);  \
        BLAKE2B_ROUND(G, 6);  \
        BLAKE2B_ROUND(G, 7);  \
        BLAKE2B_ROUND(G, 8);  \
        BLAKE2B_ROUND(G, 9);  \
        BLAKE2B_ROUND(G, 10); \
        BLAKE2B_ROUND(G, 11); \
    } while (0)

/* One block into the state h; `counted` is the bytes hashed so far, this block's too. */
static void blake2b_compress(uint64_t h[8], const uint8_t *block, uint64_t counted, int last) {
    uint64_t m[16], v[16];
    for (int i = 0; i < 16; i++) m[i] = blake2b_load64(block + 8 * i);
    for (int i = 0; i < 8; i++) {
        v[i] = h[i];
        v[i + 8] = blake2b_iv[i];
    }
    v[12] ^= counted; /* the counter's high word stays 0: buffers are far below 2^64 */
    if (last) v[14] = ~v[14];
    BLAKE2B_ROUNDS(BLAKE2B_G);
    for (int i = 0; i < 8; i++) h[i] ^= v[i] ^ v[i + 8];
}

#define BLAKE2B_PARAM (0x01010000ULL | BLAKE2B_DIGEST) /* depth 1, fanout 1, no key */

static void blake2b_hex_of(const uint64_t h0, const uint64_t h1, char hex[2 * BLAKE2B_DIGEST]) {
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < BLAKE2B_DIGEST; i++) {
        uint8_t byte = (uint8_t)((i < 8 ? h0 : h1) >> (8 * (i % 8)));
        hex[2 * i] = digits[byte >> 4];
        hex[2 * i + 1] = digits[byte & 15];
    }
}

/* The 16-byte digest of data[0:len], written as 32 lowercase hex characters. */
static void blake2b16_hex(const uint8_t *data, size_t len, char hex[2 * BLAKE2B_DIGEST]) {
    uint64_t h[8];
    memcpy(h, blake2b_iv, sizeof h);
    h[0] ^= BLAKE2B_PARAM;
    uint64_t counted = 0;
    while (len > BLAKE2B_BLOCK) { /* the last block, even a full one, is compressed last */
        counted += BLAKE2B_BLOCK;
        blake2b_compress(h, data, counted, 0);
        data += BLAKE2B_BLOCK;
        len -= BLAKE2B_BLOCK;
    }
    uint8_t block[BLAKE2B_BLOCK] = {0};
    if (len) memcpy(block, data, len);
    blake2b_compress(h, block, counted + len, 1);
    blake2b_hex_of(h[0], h[1], hex);
}

/* -- four buffers at once, in the lanes of AVX2 registers ----------------------------
 *
 * One buffer's blocks depend on each other, so one digest leaves most of a vector unit
 * idle; four digests side by side (a word of each in a register's four lanes) run the
 * same rounds in about a third of the time. Used where the CPU has AVX2, found at run
 * time: the build needs no flag and runs anywhere. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define BLAKE2B_LANES 4

#define B4_ROTR32(x) _mm256_shuffle_epi32((x), _MM_SHUFFLE(2, 3, 0, 1))
#define B4_ROTR24(x) _mm256_shuffle_epi8((x), rot24)
#define B4_ROTR16(x) _mm256_shuffle_epi8((x), rot16)
#define B4_ROTR63(x) _mm256_or_si256(_mm256_srli_epi64((x), 63), _mm256_add_epi64((x), (x)))
#define B4_G(a, b, c, d, x, y)                                                   \
    do {                                                                         \
        v[a] = _mm256_add_epi64(_mm256_add_epi64(v[a], v[b]), (x));              \
        v[d] = B4_ROTR32(_mm256_xor_si256(v[d], v[a]));                          \
        v[c] = _mm256_add_epi64(v[c], v[d]);                                     \
        v[b] = B4_ROTR24(_mm256_xor_si256(v[b], v[c]));                          \
        v[a] = _mm256_add_epi64(_mm256_add_epi64(v[a], v[b]), (y));              \
        v[d] = B4_ROTR16(_mm256_xor_si256(v[d], v[a]));                          \
        v[c] = _mm256_add_epi64(v[c], v[d]);                                     \
        v[b] = B4_ROTR63(_mm256_xor_si256(v[b], v[c]));                          \
    } while (0)
/* The digests of data[k][0:len[k]], k < 4, into hex[k]: the scalar code's steps, a
 * buffer a lane. A lane whose buffer has fewer blocks idles (its state kept) while the
 * others go on. */
__attribute__((target("avx2"))) static void blake2b16_hex4(const uint8_t *const data[4],
                                                           const size_t len[4],
                                                           char *const hex[4]) {
    const __m256i rot24 = _mm256_setr_epi8(3, 4, 5, 6, 7, 0, 1, 2, 11, 12, 13, 14, 15, 8, 9,
                                           10, 3, 4, 5, 6, 7, 0, 1, 2, 11, 12, 13, 14, 15, 8,
                                           9, 10);
    const __m256i rot16 = _mm256_setr_epi8(2, 3, 4, 5, 6, 7, 0, 1, 10, 11, 12, 13, 14, 15, 8,
                                           9, 2, 3, 4, 5, 6, 7, 0, 1, 10, 11, 12, 13, 14, 15,
                                           8, 9);
    static const uint8_t idle[BLAKE2B_BLOCK] = {0};
    uint8_t last_blocks[4][BLAKE2B_BLOCK];
    size_t blocks[4], most = 0;
    __m256i h[8];
    for (int i = 0; i < 8; i++)
        h[i] = _mm256_set1_epi64x((long long)(blake2b_iv[i] ^ (i ? 0 : BLAKE2B_PARAM)));
    for (int k = 0; k < 4; k++) {
        blocks[k] = len[k] ? (len[k] + BLAKE2B_BLOCK - 1) / BLAKE2B_BLOCK : 1;
        size_t tail = len[k] - (blocks[k] - 1) * BLAKE2B_BLOCK;
        memset(last_blocks[k], 0, BLAKE2B_BLOCK);
        if (tail) memcpy(last_blocks[k], data[k] + (blocks[k] - 1) * BLAKE2B_BLOCK, tail);
        if (blocks[k] > most) most = blocks[k];
    }
    for (size_t t = 0; t < most; t++) {
        const uint8_t *block[4];
        long long counted[4], last[4], active[4];
        for (int k = 0; k < 4; k++) {
            active[k] = t < blocks[k] ? -1 : 0;
            last[k] = t + 1 == blocks[k] ? -1 : 0;
            counted[k] = (long long)(last[k] ? len[k] : (t + 1) * BLAKE2B_BLOCK);
            block[k] = !active[k] ? idle : last[k] ? last_blocks[k] : data[k] + t * BLAKE2B_BLOCK;
        }
        __m256i m[16], v[16];
        for (int g = 0; g < 4; g++) { /* words 4g..4g+3 of each block, lanes transposed */
            __m256i a0 = _mm256_loadu_si256((const __m256i *)(block[0] + 32 * g));
            __m256i a1 = _mm256_loadu_si256((const __m256i *)(block[1] + 32 * g));
            __m256i a2 = _mm256_loadu_si256((const __m256i *)(block[2] + 32 * g));
            __m256i a3 = _mm256_loadu_si256((const __m256i *)(block[3] + 32 * g));
            __m256i t0 = _mm256_unpacklo_epi64(a0, a1), t1 = _mm256_unpackhi_epi64(a0, a1);
            __m256i t2 = _mm256_unpacklo_epi64(a2, a3), t3 = _mm256_unpackhi_epi64(a2, a3);
            m[4 * g] = _mm256_permute2x128_si256(t0, t2, 0x20);
            m[4 * g + 1] = _mm256_permute2x128_si256(t1, t3, 0x20);
            m[4 * g + 2] = _mm256_permute2x128_si256(t0, t2, 0x31);
            m[4 * g + 3] = _mm256_permute2x128_si256(t1, t3, 0x31);
        }
        for (int i = 0; i < 8; i++) {
            v[i] = h[i];
            v[i + 8] = _mm256_set1_epi64x((long long)blake2b_iv[i]);
        }
        v[12] = _mm256_xor_si256(v[12], _mm256_loadu_si256((const __m256i *)counted));
        v[14] = _mm256_xor_si256(v[14], _mm256_loadu_si256((const __m256i *)last));
        BLAKE2B_ROUNDS(B4_G);
        __m256i keep = _mm256_loadu_si256((const __m256i *)active);
        for (int i = 0; i < 8; i++) {
            __m256i next = _mm256_xor_si256(h[i], _mm256_xor_si256(v[i], v[i + 8]));
            h[i] = _mm256_blendv_epi8(h[i], next, keep);
        }
    }
    uint64_t h0[4], h1[4];
    _mm256_storeu_si256((__m256i *)h0, h[0]);
    _mm256_storeu_si256((__m256i *)h1, h[1]);
    for (int k = 0; k < 4; k++) blake2b_hex_of(h0[k], h1[k], hex[k]);
}

static int blake2b_has_avx2(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
}
#else
#define BLAKE2B_LANES 1
static int blake2b_has_avx2(void) { return 0; }
#endif

/* The digests of n <= 64 buffers (data[k][0:len[k]] into hex[k]), four at a time where
 * the CPU can (`lanes` 4: its AVX2 was found), else one by one. Buffers of about as many
 * blocks go together, so few lanes idle. */
static void blake2b16_hex_many(const uint8_t *const *data, const size_t *len, char *const *hex,
                               size_t n, int lanes) {
    size_t order[64], fours = 0;
    for (size_t i = 0; i < n; i++) { /* by length for the lanes (insertion sort, short) */
        size_t j = i;
        while (lanes == 4 && j > 0 && len[order[j - 1]] > len[i]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
#if BLAKE2B_LANES == 4
    if (lanes == 4) {
        fours = n / 4 * 4;
        for (size_t i = 0; i < fours; i += 4) {
            const uint8_t *d[4] = {data[order[i]], data[order[i + 1]], data[order[i + 2]],
                                   data[order[i + 3]]};
            size_t l[4] = {len[order[i]], len[order[i + 1]], len[order[i + 2]],
                           len[order[i + 3]]};
            char *const x[4] = {hex[order[i]], hex[order[i + 1]], hex[order[i + 2]],
                                hex[order[i + 3]]};
            blake2b16_hex4(d, l, x);
        }
    }
#endif
    for (size_t i = fours; i < n; i++) blake2b16_hex(data[order[i]], len[order[i]], hex[order[i]]);
}

#endif
