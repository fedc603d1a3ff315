-- wrk script for benches/webhook_load.sh: POSTs signed pull_request webhooks, each with a
-- unique X-GitHub-Delivery id, cycling over pre-signed payloads (one PR number each).
-- Arguments (after `--`): PAYLOAD_DIR COUNT [DELAY_MS [EXPECTED_STATUS]]
--   PAYLOAD_DIR holds N.json and N.sig (the X-Hub-Signature-256 value) for N = 1..COUNT.
--   DELAY_MS > 0 paces each connection (one request, then on average DELAY_MS ms): with C
--   connections the offered rate is about C * 1000 / DELAY_MS requests per second.
--   EXPECTED_STATUS (default 202): answers with another status are counted as non_ok.
-- Requests go to the path of the URL given to wrk.

local next_thread = 1
local threads = {}

function setup(thread)
  thread:set("thread_id", next_thread)
  next_thread = next_thread + 1
  table.insert(threads, thread)
end

local payloads = {}
local signatures = {}
local count = 0
local pause = 0
local expected = 202
local sent = 0
unexpected = 0

local function slurp(path)
  local file = assert(io.open(path, "rb"))
  local text = file:read("*a")
  file:close()
  return text
end

function init(args)
  math.randomseed(os.time() * 1000 + thread_id)
  local dir = args[1]
  count = tonumber(args[2])
  pause = tonumber(args[3] or "0")
  expected = tonumber(args[4] or "202")
  for i = 1, count do
    payloads[i] = slurp(dir .. "/" .. i .. ".json")
    signatures[i] = slurp(dir .. "/" .. i .. ".sig"):gsub("%s+$", "")
  end
end

function request()
  sent = sent + 1
  local i = (sent % count) + 1
  local headers = {
    ["Content-Type"] = "application/json",
    ["X-GitHub-Event"] = "pull_request",
    ["X-GitHub-Delivery"] = string.format("bench-%d-%d-%d", os.time(), thread_id, sent),
    ["X-Hub-Signature-256"] = signatures[i],
  }
  return wrk.format("POST", nil, headers, payloads[i])
end

-- Uniform jitter around the pause keeps the connections from moving in lockstep (which would
-- turn the paced run into bursts of C simultaneous requests).
function delay()
  if pause <= 0 then
    return 0
  end
  return math.floor(pause * (0.5 + math.random()) + 0.5)
end

function response(status, headers, body)
  if status ~= expected then
    unexpected = unexpected + 1
  end
end

function done(summary, latency, requests)
  local bad = 0
  for _, thread in ipairs(threads) do
    bad = bad + thread:get("unexpected")
  end
  io.write(string.format("RESULT requests=%d seconds=%.1f rps=%.0f p50_ms=%.2f p90_ms=%.2f p99_ms=%.2f p999_ms=%.2f max_ms=%.2f non_ok=%d errors=%d\n",
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(90) / 1000,
    latency:percentile(99) / 1000, latency:percentile(99.9) / 1000, latency.max / 1000,
    bad, summary.errors.connect + summary.errors.read + summary.errors.write
      + summary.errors.status + summary.errors.timeout))
end
