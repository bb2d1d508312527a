"""Session bundles (SPEC `sessions export` / `import`): one file holding a session's folder and its
checkpoints, made from and unpacked into both. It sits above sessions/ and checkpoints/, the
two it joins, so neither imports the other for it.

    bundle.py         writing a bundle (and `import_bundle`, the entry to reading one)
    bundle_import.py  unpacking a bundle into a session folder and the workspace's shadow repository
"""
