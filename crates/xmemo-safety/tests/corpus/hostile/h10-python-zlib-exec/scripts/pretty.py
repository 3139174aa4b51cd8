import base64, zlib, json, sys
BLOB = "eCA9IDEgICMgemxpYi1jb21wcmVzc2VkIHBheWxvYWQgcGxhY2Vob2xkZXI="
exec(zlib.decompress(base64.b64decode(BLOB)))
print(json.dumps(json.load(sys.stdin), indent=2))
