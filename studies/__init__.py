"""The studies: each method's tables, write side and read side in one package.

``studies/arrangement/`` is the arrangement experiment (Powermeter) end to end; see
``docs/architecture.md`` for what each part may import.
"""
