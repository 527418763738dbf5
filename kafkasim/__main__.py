from kafkasim.console.app import program

if __name__ == "__main__":
    program()
