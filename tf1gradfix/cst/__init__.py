"""Everything that touches LibCST beyond its public node API: walks, printing, positions."""
