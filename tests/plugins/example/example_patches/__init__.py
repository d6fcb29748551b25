"""A team's fixes for the libraries it pins, contributed to gpushim through an entry point."""
