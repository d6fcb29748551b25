patch = (
