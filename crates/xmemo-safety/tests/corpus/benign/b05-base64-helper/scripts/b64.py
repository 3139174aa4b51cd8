import base64, sys

def main(mode, path):
    data = open(path, "rb").read()
    if mode == "encode":
        sys.stdout.write(base64.b64encode(data).decode())
    else:
        sys.stdout.buffer.write(base64.b64decode(data))

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
