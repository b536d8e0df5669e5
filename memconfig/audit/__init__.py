"""``memconfig audit``: memconfig's load logs, from anywhere, read once into a summary per source and per render."""
