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

#define BLAKE2B_ROUND(r)                                                            \
    do {                                                                            \
        BLAKE2B_G(0, 4, 8, 12, m[blake2b_sigma[r][0]], m[blake2b_sigma[r][1]]);     \
        BLAKE2B_G(1, 5, 9, 13, m[blake2b_sigma[r][2]], m[blake2b_sigma[r][3]]);     \
        BLAKE2B_G(2, 6, 10, 14, m[blake2b_sigma[r][4]], m[blake2b_sigma[r][5]]);    \
        BLAKE2B_G(3, 7, 11, 15, m[blake2b_sigma[r][6]], m[blake2b_sigma[r][7]]);    \
        BLAKE2B_G(0, 5, 10, 15, m[blake2b_sigma[r][8]], m[blake2b_sigma[r][9]]);    \
        BLAKE2B_G(1, 6, 11, 12, m[blake2b_sigma[r][10]], m[blake2b_sigma[r][11]]);  \
        BLAKE2B_G(2, 7, 8, 13, m[blake2b_sigma[r][12]], m[blake2b_sigma[r][13]]);   \
        BLAKE2B_G(3, 4, 9, 14, m[blake2b_sigma[r][14]], m[blake2b_sigma[r][15]]);   \
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
    /* Rounds written out: each round's message indexes are then constants. */
    BLAKE2B_ROUND(0);
    BLAKE2B_ROUND(1);
    BLAKE2B_ROUND(2);
    BLAKE2B_ROUND(3);
    BLAKE2B_ROUND(4);
    BLAKE2B_ROUND(5);
    BLAKE2B_ROUND(6);
    BLAKE2B_ROUND(7);
    BLAKE2B_ROUND(8);
    BLAKE2B_ROUND(9);
    BLAKE2B_ROUND(10);
    BLAKE2B_ROUND(11);
    for (int i = 0; i < 8; i++) h[i] ^= v[i] ^ v[i + 8];
}

/* The 16-byte digest of data[0:len], written as 32 lowercase hex characters. */
static void blake2b16_hex(const uint8_t *data, size_t len, char hex[2 * BLAKE2B_DIGEST]) {
    static const char digits[] = "0123456789abcdef";
    uint64_t h[8];
    memcpy(h, blake2b_iv, sizeof h);
    h[0] ^= 0x01010000ULL | BLAKE2B_DIGEST; /* depth 1, fanout 1, no key, digest length */
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
    for (int i = 0; i < BLAKE2B_DIGEST; i++) {
        uint8_t byte = (uint8_t)(h[i / 8] >> (8 * (i % 8)));
        hex[2 * i] = digits[byte >> 4];
        hex[2 * i + 1] = digits[byte & 15];
    }
}

#endif
