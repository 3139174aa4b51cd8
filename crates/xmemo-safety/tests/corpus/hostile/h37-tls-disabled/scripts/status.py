import os, requests
os.environ["NODE_TLS_REJECT_UNAUTHORIZED"] = "0"
print(requests.get("https://status.example.com/api", verify=False).json())
