#!/usr/bin/python3
"""Opens the hourglass console in Debian's headless Chromium (python3-selenium, chromium-driver)
and checks what an operator sees: the counts, the upcoming chart, the rejection with its reason,
the cron job's next run, search by routing-key prefix and by id, a job id holding <script>
shown as text, and cancel refused without the token and done with it. Saves a screenshot.

Run by tests/integration/console_test.cpp against a running hourglass; exits 0 when all holds.
"""
import argparse
import re
import sys
import tempfile

from selenium import webdriver
from selenium.common.exceptions import (NoAlertPresentException, NoSuchElementException,
                                        StaleElementReferenceException, TimeoutException)
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    for name in ("url", "token", "job-id", "script-id", "cron-id", "rejected-key", "reason",
                 "prefix", "screenshot"):
        parser.add_argument("--" + name, required=True)
    args = parser.parse_args()

    options = Options()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1400,1900", "--user-data-dir=" + tempfile.mkdtemp()):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    failures = []

    def check(condition, what):
        print(("ok   " if condition else "FAIL ") + what)
        if not condition:
            failures.append(what)

    def wait_for(predicate, what, timeout=25):
        try:
            # The page redraws what it shows: an element may vanish between finding and reading it.
            WebDriverWait(driver, timeout, poll_frequency=0.25,
                          ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)
                          ).until(lambda d: predicate())
            check(True, what)
            return True
        except TimeoutException:
            check(False, what + " (within %d s)" % timeout)
            return False

    def text(element_id):
        return driver.find_element(By.ID, element_id).text

    def search(query):
        box = driver.find_element(By.ID, "search-input")
        box.clear()
        box.send_keys(query)
        driver.find_element(By.ID, "search-button").click()

    try:
        driver.get(args.url)
        # Counts: the stats refresher reads every 5 s, the page refreshes every 5 s.
        wait_for(lambda: text("count-pending") == "4", "counts show 4 pending jobs")
        check(text("instances") == "1", "one instance is running")
        def bars(chart):  # read at once: the page redraws its charts every 5 s
            return driver.execute_script(
                "return [...document.querySelectorAll(arguments[0])]"
                ".map(bar => Number(bar.getAttribute('data-jobs')))", chart + " svg rect.bar")
        minutes = bars("#upcoming-minutes")
        check(len(minutes) == 60, "the next hour has 60 bars (one per minute)")
        check(sum(minutes) == 2, "the next hour's chart counts the 2 jobs due in 10 minutes")
        check(sum(bars("#upcoming-hours")) == 3, "the next day's chart counts 3 jobs")
        rejections = text("rejections")
        check(args.rejected_key in rejections and args.reason in rejections,
              "the rejection shows its routing key and reason")
        cron = text("cron")
        check(args.cron_id in cron and re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d", cron) is not None,
              "the cron job shows its next run")

        search(args.prefix)
        wait_for(lambda: args.job_id in text("search-results"), "search by routing-key prefix finds the job")

        search(args.script_id)
        wait_for(lambda: driver.find_elements(By.ID, "job-id") and text("job-id") == args.script_id,
                 "a job id holding <script> is shown as text")
        check(len(driver.find_elements(By.TAG_NAME, "script")) == 1, "no script element was injected")
        check(len(driver.find_elements(By.CSS_SELECTOR, "#job img")) == 0, "no img element was injected")
        check(driver.title == "hourglass", "the page title is untouched")
        try:
            driver.switch_to.alert
            check(False, "no alert was raised")
        except NoAlertPresentException:
            check(True, "no alert was raised")

        search(args.job_id)
        wait_for(lambda: driver.find_elements(By.ID, "job-state") and text("job-state") == "pending",
                 "search by id shows the job pending")
        driver.find_element(By.ID, "cancel-button").click()
        wait_for(lambda: "refused" in text("cancel-result"), "cancel without the token is refused")
        driver.find_element(By.ID, "token-input").send_keys("not-the-token")
        driver.find_element(By.ID, "cancel-button").click()
        wait_for(lambda: "refused" in text("cancel-result"), "cancel with a wrong token is refused")
        check(text("job-state") == "pending", "the job is still pending")
        token = driver.find_element(By.ID, "token-input")
        token.clear()
        token.send_keys(args.token)
        driver.find_element(By.ID, "cancel-button").click()
        wait_for(lambda: text("job-state") == "cancelled", "cancel with the token: the job ends cancelled")
        token.clear()
        # The counts come from the stats refresher (every 5 s, longer while a read is slow, as
        # under CI's load) and the page's own refresh (5 s): once failed at 25 s in CI.
        wait_for(lambda: text("count-cancelled") == "1", "the counts show the cancelled job",
                 timeout=45)
    finally:
        driver.save_screenshot(args.screenshot)
        print("screenshot: " + args.screenshot)
        driver.quit()

    if failures:
        print("%d checks failed" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
