TARGET = "gpushim_example_target"
DISTRIBUTIONS = ("gpushim-example-target",)
