from kafkasim.console.app import main

if __name__ == "__main__":
    main()
