from caseboard.cli.main import run

run()
