-- Answers Redline posted (or is about to post) in each review thread, counted here before
-- the model is asked, so that `chat_max_replies` holds whatever the number of concurrent
-- comments, deliveries or replicas: a thread's count only grows while it is below the cap.
CREATE TABLE thread_answers (
    repo_full_name TEXT NOT NULL,
    root_id BIGINT NOT NULL,
    answers BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (repo_full_name, root_id)
);
