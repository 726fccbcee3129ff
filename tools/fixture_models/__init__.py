"""The models of the .pte test fixtures (tests/models), one module per family; tools/export_fixtures.py
lists the fixtures (fixtures(): names, inputs, export options) and exports them. Export environment only."""
