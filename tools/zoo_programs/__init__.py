"""tools/zoo_export.py's programs (a registry filled by one module per family, small and full-size)
and their export pipeline. Export environment only (torch 2.13 + executorch 1.3.1 + torchvision +
timm + transformers + torchao)."""
