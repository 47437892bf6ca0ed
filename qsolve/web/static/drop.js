// A drop zone for a file input: <div class="drop" data-for="INPUT_ID">...</div>. Dropping a file on it
// puts the file in the input (the form is then sent as usual); clicking it opens the file chooser.
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll(".drop[data-for]").forEach(function (zone) {
    var input = document.getElementById(zone.dataset.for);
    if (!input) return;
    var label = zone.querySelector(".drop-name");
    function show() {
      if (label) label.textContent = input.files.length ? input.files[0].name : "";
      zone.classList.toggle("has-file", input.files.length > 0);
    }
    zone.addEventListener("click", function () { input.click(); });
    zone.addEventListener("dragover", function (e) { e.preventDefault(); zone.classList.add("over"); });
    zone.addEventListener("dragleave", function () { zone.classList.remove("over"); });
    zone.addEventListener("drop", function (e) {
      e.preventDefault();
      zone.classList.remove("over");
      if (e.dataTransfer && e.dataTransfer.files.length) {
        input.files = e.dataTransfer.files;
        show();
      }
    });
    input.addEventListener("change", show);
  });
});
