blocks = [bytearray(16 << 20) for _ in range(16)]
print(len(blocks))
