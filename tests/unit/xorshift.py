"""The xorshift32 byte generator the vector scripts (gcm_vectors.py,
sha256_vectors.py) draw keys and messages from; test_sha256accel.c has the
same generator in C, so a long message need not be stored in the .inc."""


def xorshift_bytes(seed: int, length: int) -> bytes:
    x = (seed * 2654435761 + 1) & 0xFFFFFFFF or 1
    out = bytearray()
    for _ in range(length):
        x ^= (x << 13) & 0xFFFFFFFF
        x ^= x >> 17
        x ^= (x << 5) & 0xFFFFFFFF
        out.append(x & 0xFF)
    return bytes(out)
