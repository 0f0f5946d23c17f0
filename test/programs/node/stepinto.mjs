// A method that awaits a private one: stepping into the call lands in it.
class Service {
  async load(id) {
    const badges = await this.#badges(id);
    return badges;
  }

  async #badges(id) {
    const list = [id, id + 1];
    return list;
  }
}

const service = new Service();
console.log(await service.load(1));
