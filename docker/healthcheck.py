#!/usr/bin/env python3
"""The image's HEALTHCHECK: a container running `ioi-run serve` is healthy when its server
answers `GET /api/v2/runtimes`; any other command (doctor, judge, evaluate) is healthy while it
runs, so a long evaluation is never reported unhealthy.

The server's command line is PID 1's (the entrypoint execs ioi-run): the first port of
`--ports`, else `--port`, else 2000, on `--host` unless it is every address (then loopback).
"""
import os
import sys
import urllib.request


def option(args, name):
    """The value of `--name VALUE` or `--name=VALUE` in args, or None."""
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg[len(name) + 1:]
    return None


# ioi-run's own options that take a value, which may come before the subcommand
# (`ioi-run --log-format json serve`).
GLOBAL_OPTIONS_WITH_A_VALUE = ("--color", "--log-format")


def subcommand_of(args):
    """The subcommand in an ioi-run command line (args[0] is the program), or None."""
    rest = iter(args[1:])
    for arg in rest:
        if arg in GLOBAL_OPTIONS_WITH_A_VALUE:
            next(rest, None)
        elif not arg.startswith("-"):
            return arg
    return None


def url_to_probe(args):
    """The URL a server started by this command line answers on, or None when the command
    is not `ioi-run serve` (healthy while it runs) or its port is the kernel's pick."""
    if not args or os.path.basename(args[0]) != "ioi-run" or subcommand_of(args) != "serve":
        return None
    ports = option(args, "--ports")
    port = ports.split(",")[0].split("-")[0].strip() if ports else option(args, "--port")
    port = port or "2000"
    if port == "0":
        return None  # a port the kernel picked: nothing to probe by number
    host = option(args, "--host") or "127.0.0.1"
    if host in ("0.0.0.0", "::", "[::]"):
        host = "127.0.0.1"
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}/api/v2/runtimes"


def main():
    with open("/proc/1/cmdline", "rb") as f:
        args = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    url = url_to_probe(args)
    if url is None:
        return 0
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return 0 if answer.status == 200 else 1
    except OSError as e:
        print(f"{url}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
