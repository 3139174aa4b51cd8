import importlib, json
config = json.load(open("plugins.json"))
for name in config["plugins"]:
    module = importlib.import_module(f"plugins.{name}")
    fn = getattr(module, "format", None)
    if fn:
        fn()
