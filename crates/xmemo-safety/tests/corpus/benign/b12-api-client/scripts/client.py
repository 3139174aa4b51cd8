import os, sys, requests
key = os.environ["EXAMPLE_API_KEY"]
r = requests.get("https://api.example.com/v1/forecast", params={"q": sys.argv[1]},
                 headers={"Authorization": f"Bearer {key}"}, timeout=10)
print(r.json())
