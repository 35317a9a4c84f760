"""`python -m rlaunch ...`: the same command line as the `rlaunch` console script."""

from rlaunch.cli import main

if __name__ == "__main__":
    main(prog_name="rlaunch")
