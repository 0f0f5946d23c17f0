print("user sitecustomize ran")
