"""A Piston client that behaves like open-r1's (src/open_r1/utils/competitive_programming/
piston_client.py), written for this project with the standard library only.

What it keeps from the original, because each of these breaks or starves a single server:
- each training process takes `endpoints[rank::world]` of PISTON_ENDPOINTS (sorted first);
- at most `max_requests_per_endpoint` requests in flight per endpoint (a token queue);
- a non-200 answer, or "Resource temporarily unavailable" in run.stderr, is retried up to five
  times with exponential back-off (1, 2, 4, 8, 10 s); a refused connection probes
  GET /runtimes on every endpoint; after the last retry the request fails (a lost reward);
- an answer must start within 30 s (aiohttp's `sock_read=30`).
Threads replace asyncio so that nothing outside the standard library is needed.
"""

import json
import queue
import threading
import time
import urllib.error
import urllib.request

READ_TIMEOUT = 30


class PistonError(Exception):
    pass


def endpoints_for_rank(endpoints, rank, world):
    """The endpoints one training process uses, as get_piston_client_from_env picks them."""
    endpoints = sorted(endpoints)
    if world > 1:
        endpoints = endpoints[rank::world]
    if not endpoints:
        raise ValueError("No Piston endpoints provided. Please check your PISTON_ENDPOINTS environment variable.")
    return endpoints


class PistonClient:
    def __init__(self, endpoints, max_requests_per_endpoint=1, max_retries=5):
        self.endpoints = list(endpoints)
        self.max_retries = max_retries
        self.tokens = queue.Queue()
        for _ in range(max_requests_per_endpoint):
            for endpoint in self.endpoints:
                self.tokens.put(endpoint)
        self.lock = threading.Lock()
        self.stats = {"requests": 0, "retries": 0, "failures": 0, "busy": 0}

    def _count(self, key):
        with self.lock:
            self.stats[key] += 1

    def _post(self, endpoint, route, data):
        body = json.dumps(data).encode()
        request = urllib.request.Request(
            f"{endpoint.rstrip('/')}/{route}", data=body, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=READ_TIMEOUT) as response:
                return response.status, json.load(response)
        except urllib.error.HTTPError as error:
            try:
                return error.code, json.load(error)
            except ValueError:
                return error.code, None

    def get_supported_runtimes(self):
        answers = []
        for endpoint in self.endpoints:
            with urllib.request.urlopen(f"{endpoint.rstrip('/')}/runtimes", timeout=READ_TIMEOUT) as r:
                answers.append(json.load(r))
        return answers

    def send_execute(self, data, language="cms_ioi"):
        data = data | {"language": language, "version": "*"}
        self._count("requests")
        last_error = None
        for attempt in range(self.max_retries + 1):
            endpoint = self.tokens.get()
            try:
                if attempt > 0:
                    time.sleep(1)
                status, answer = self._post(endpoint, "execute", data)
                if status != 200:
                    if status == 503:
                        self._count("busy")
                    raise PistonError(f"Server error. status={status}. {answer}")
                if answer is None:
                    raise PistonError(f"Empty response. status={status}")
                if "run" in answer and "Resource temporarily unavailable" in answer["run"].get("stderr", ""):
                    raise PistonError(f"Piston overloaded: {answer['run']['stderr']}")
                return answer
            except (PistonError, OSError) as error:
                last_error = error
                if attempt < self.max_retries:
                    self._count("retries")
                    if isinstance(error, urllib.error.URLError) and "refused" in str(error):
                        self.get_supported_runtimes()
                    self.tokens.put(endpoint)
                    endpoint = None
                    time.sleep(min(2**attempt, 10))
            finally:
                if endpoint is not None:
                    self.tokens.put(endpoint)
        self._count("failures")
        raise PistonError(f"gave up after {self.max_retries} retries: {last_error}")
